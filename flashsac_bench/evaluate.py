"""`python -m flashsac_bench.evaluate`: the command line in flashsac_bench.cli.evaluate."""

from flashsac_bench.cli.evaluate import main

if __name__ == "__main__":
    main()

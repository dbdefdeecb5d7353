"""`python -m flashsac_bench.convert`: the command line in flashsac_bench.cli.convert."""

from flashsac_bench.cli.convert import main

if __name__ == "__main__":
    main()

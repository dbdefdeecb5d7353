"""`python -m flashsac_bench.export`: the command line in flashsac_bench.cli.export."""

from flashsac_bench.cli.export import main

if __name__ == "__main__":
    main()

"""`python -m flashsac_bench.summary`: the command line in flashsac_bench.cli.summary."""

import sys

from flashsac_bench.cli.summary import main

if __name__ == "__main__":
    sys.exit(main())

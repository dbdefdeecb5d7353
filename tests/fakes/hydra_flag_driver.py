"""Send a crafted pickle through every Hydra flag that takes a value, for every command, in one
process: `python -m tests.fakes.hydra_flag_driver MARKER PICKLE RESULTS`.

The pickle, if ever unpickled, creates MARKER. Each command's real `main` runs with the flag and
the pickle's path (plus `--cfg job`, so that a flag Hydra accepts prints the config instead of
starting a job); RESULTS gets [command, dest, exit status] per call, as JSON."""

from __future__ import annotations

import importlib
import json
import pickle
import sys
from pathlib import Path

COMMANDS = {
    "flashsac_bench": "flashsac_bench.__main__",
    "flashsac_bench.evaluate": "flashsac_bench.cli.evaluate",
    "flashsac_bench.export": "flashsac_bench.cli.export",
    "flashsac_bench.convert": "flashsac_bench.cli.convert",
}


class Payload:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def main() -> None:
    marker, crafted, results = sys.argv[1:4]
    Path(crafted).write_bytes(pickle.dumps(Payload(marker)))
    from hydra._internal.utils import get_args_parser

    flags = [a for a in get_args_parser()._actions if a.nargs != 0]
    out = []
    for command, module in COMMANDS.items():
        entry = importlib.import_module(module).main
        for action in flags:
            argv = [*action.option_strings[:1], crafted]
            if action.dest != "cfg":
                argv += ["--cfg", "job"]
            sys.argv = [command, *argv]
            try:
                entry()
                code = 0
            except SystemExit as err:
                code = err.code
            out.append([command, action.dest, code])
    Path(results).write_text(json.dumps(out))


if __name__ == "__main__":
    main()

"""What a command writes never replaces what it reads, nor a run's own checkpoints.

convert, export and evaluate name their outputs from options (`out`, `out_dir`); a careless
paste can name the very file the command reads (`out=<the source>`), by another path (a
symlink, a hard link, `..`), or a file of a run's `checkpoints/` folder, which the run resumes
from. `refuse_overwriting` refuses such an output in one line before anything is written,
whatever `overwrite` says: a run's checkpoints are written by that run alone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from flashsac_bench.runner.checkpoint import CHECKPOINT_DIR, LATEST_NAME

# The files of a run's checkpoints/ folder that the run writes and resumes from.
_RUN_FILES = re.compile(rf"iter_\d+\.pt|{re.escape(LATEST_NAME)}")


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)  # a hard link
    except OSError:  # one of them does not exist (yet)
        return False


def is_run_checkpoint_file(path: Path) -> bool:
    """A checkpoint (iter_<k>.pt) or latest.txt in a run's checkpoints/ folder."""
    resolved = path.resolve()
    return resolved.parent.name == CHECKPOINT_DIR and bool(_RUN_FILES.fullmatch(resolved.name))


def refuse_overwriting(
    outputs: Iterable[Path], reads: Iterable[Path], error: type[Exception], option: str
) -> None:
    """`error` (one line) for the first of `outputs` that is one of the files the command
    `reads`, or a run's own checkpoint file; `option`: the option that names the outputs."""
    reads = [Path(r).expanduser() for r in reads]
    for out in (Path(o).expanduser() for o in outputs):
        read = next((r for r in reads if _same_file(out, r)), None)
        if read is not None:
            why = f"the file this command reads ({read})"
        elif is_run_checkpoint_file(out):
            why = f"a run's own {out.resolve().name} in its {CHECKPOINT_DIR}/ folder"
        else:
            continue
        raise error(
            f"{option}: {out} is {why}: a command never writes over what it reads or a run's "
            "checkpoints, whatever overwrite says; name another output"
        )

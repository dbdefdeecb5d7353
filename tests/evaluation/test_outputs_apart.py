"""No command writes over a file it reads or over a run's own checkpoints (runner.outputs).

convert's `out`, export's and evaluate's `out_dir` that name the checkpoint the command reads
(by its path, a symlink, a hard link or a path through `..`), or a checkpoint / latest.txt of a
run's checkpoints/ folder, are refused in one line whatever `overwrite` says, and the file is
left as it was.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flashsac_bench.cli.convert import ConversionError, ConvertConfig, convert
from flashsac_bench.config.errors import ConfigError
from flashsac_bench.runner.checkpoint import CHECKPOINT_DIR, LATEST_NAME
from flashsac_bench.runner.outputs import refuse_overwriting
from tests.fakes.runs import with_repo_on_path


@pytest.fixture
def run(trained_run, tmp_path) -> Path:
    """A copy of the tiny G1 run (its checkpoints and latest.txt)."""
    return Path(shutil.copytree(trained_run.run_dir, tmp_path / "run"))


def _newest(run: Path) -> Path:
    return sorted((run / CHECKPOINT_DIR).glob("iter_*.pt"))[-1]


def test_an_output_that_is_what_the_command_reads_is_refused_by_any_path(run, tmp_path):
    source = _newest(run)
    (tmp_path / "link.pt").symlink_to(source)
    os.link(source, tmp_path / "hard.pt")
    same = [
        source,
        tmp_path / "link.pt",
        tmp_path / "hard.pt",
        run / CHECKPOINT_DIR / ".." / CHECKPOINT_DIR / source.name,
    ]
    for out in same:
        with pytest.raises(ConfigError, match=r"^out: .* is the file this command reads"):
            refuse_overwriting([out], [source], ConfigError, "out")
    for out in (run / CHECKPOINT_DIR / LATEST_NAME, run / CHECKPOINT_DIR / "iter_0000099.pt"):
        with pytest.raises(ConfigError, match=r"is a run's own .* in its checkpoints/ folder"):
            refuse_overwriting([out], [tmp_path / "other.pt"], ConfigError, "out")
    refuse_overwriting(
        [tmp_path / "elsewhere.pt", run / "unilab" / "m.pt"], [source], ConfigError, "out"
    )


@pytest.mark.parametrize("out", ["source", "latest", "new checkpoint"])
def test_convert_never_writes_over_its_source_or_a_runs_checkpoints(run, out):
    source = _newest(run)
    target = {
        "source": source,
        "latest": run / CHECKPOINT_DIR / LATEST_NAME,
        "new checkpoint": run / CHECKPOINT_DIR / "iter_0000099.pt",
    }[out]
    before = {p: p.read_bytes() for p in (run / CHECKPOINT_DIR).iterdir()}
    cc = ConvertConfig(source=str(source), out=str(target), overwrite=True, unilab_device="cpu")
    with pytest.raises(ConversionError, match=r"whatever overwrite says"):
        convert(cc, {})
    assert {p: p.read_bytes() for p in (run / CHECKPOINT_DIR).iterdir()} == before


def test_export_and_evaluate_never_write_over_the_checkpoint_they_read(run, tmp_path):
    from flashsac_bench.cli.export import TORCHSCRIPT_NAME
    from flashsac_bench.cli.export import output_dir as export_dir
    from flashsac_bench.evaluation.config import EvalConfig
    from flashsac_bench.evaluation.evaluate import EVAL_NAME, output_dir

    folder = tmp_path / "out"
    folder.mkdir()
    for name in (TORCHSCRIPT_NAME, EVAL_NAME):
        shutil.copy(_newest(run), folder / name)
    with pytest.raises(ConfigError, match=rf"out_dir: .*{TORCHSCRIPT_NAME} is the file"):
        export_dir(folder / TORCHSCRIPT_NAME, folder, "false")
    ec = EvalConfig(checkpoint=str(folder / EVAL_NAME), out_dir=str(folder))
    with pytest.raises(ConfigError, match=rf"out_dir: .*{EVAL_NAME} is the file"):
        output_dir(ec, folder / EVAL_NAME)


@pytest.mark.slow
def test_the_careless_paste_through_the_cli_loses_nothing(run, tmp_path):
    """python -m flashsac_bench.convert source=<the newest checkpoint> out=<the same file>
    overwrite=true: one line, exit 2, and the run can still resume from it."""
    source = _newest(run)
    before = source.read_bytes()
    proc = subprocess.run(
        [sys.executable, "-m", "flashsac_bench.convert", f"source={source}", f"out={source}",
         "overwrite=true"],
        cwd=tmp_path, env=with_repo_on_path(dict(os.environ)), capture_output=True, text=True,
        timeout=240,
    )  # fmt: skip
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "is the file this command reads" in lines[0] and "Traceback" not in proc.stderr
    assert source.read_bytes() == before

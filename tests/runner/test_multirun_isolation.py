"""Hydra's basic launcher runs a sweep's jobs one after another in ONE process: nothing of one job
(compiled code, CUDA graphs, RNG state, thread settings, cached workspaces) may leak into the
next. Each job of a compile / eager sweep computes what the same job computes in a fresh process.
(The CUDA twin of this check is the GPU suite's six-job multirun, scripts/device/gpu_tests.sh.)"""

from __future__ import annotations

import pytest
import torch

from tests.fakes.runs import (
    cli_overrides,
    final_checkpoint_tensors,
    read_summary,
    run_cli,
    timing_free,
)


@pytest.mark.slow
def test_every_job_of_a_one_process_sweep_equals_a_fresh_process(tmp_path):
    common = cli_overrides(num_envs=8, iterations=12)
    sweep = tmp_path / "sweep"
    proc = run_cli(
        ["-m", *common, "path=compile,eager", "update=u8,u2", f"hydra.sweep.dir={sweep}"],
        cwd=tmp_path,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = {"0_u8_compile", "1_u2_compile", "2_u8_eager", "3_u2_eager"}
    assert {p.name for p in sweep.iterdir() if p.is_dir() and p.name[0].isdigit()} == jobs
    # Every job after the first ran in a process that had run another job before it.
    for name in sorted(jobs)[1:]:
        update, path = name.split("_")[1:]
        fresh = tmp_path / f"fresh_{name}"
        alone = run_cli(
            [*common, f"path={path}", f"update={update}", f"hydra.run.dir={fresh}"],
            cwd=tmp_path,
            timeout=300,
        )
        assert alone.returncode == 0, alone.stderr[-3000:]
        in_sweep, by_itself = read_summary(sweep / name), read_summary(fresh)
        assert in_sweep["complete"] and by_itself["complete"]
        learned = [timing_free(r) for r in in_sweep["rows_all"] if r["learning"]]
        assert learned, f"{name}: no learning rows to compare"
        assert learned == [timing_free(r) for r in by_itself["rows_all"] if r["learning"]], name
        a, b = final_checkpoint_tensors(sweep / name), final_checkpoint_tensors(fresh)
        assert a.keys() == b.keys()
        differ = [k for k in a if not torch.equal(a[k], b[k])]
        assert differ == [], f"{name}: {differ[:5]}"

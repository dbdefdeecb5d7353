"""The runner with envs in worker processes: a worker that raises, dies or hangs fails the run
with a CollectorError naming the worker, its envs and the iteration, within 30 s, with a partial
summary; after that, and after Ctrl-C, no worker process and no shared memory is left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from flashsac_bench.cli.train import train
from flashsac_bench.runner.checkpoint import load_checkpoint, resolve_resume_path
from flashsac_bench.runner.collector import CollectorError
from tests.fakes.processes import SHM_DIR, wait_gone
from tests.fakes.runs import cli_overrides, read_summary, tiny_config, with_repo_on_path
from tests.fakes.sharded_env import FakeShardedEnv, Faults

pytestmark = pytest.mark.skipif(not SHM_DIR.is_dir(), reason="needs POSIX shared memory")


@pytest.mark.parametrize(
    ("faults", "what"),
    [
        (Faults(fail_at=(7, 1)), "failed in 'step': RuntimeError: fake shard 1 exploded at tick 7"),
        (Faults(die_at=(7, 1)), "died during 'step' (killed by SIGKILL)"),
        (Faults(hang_at=(7, 1)), "sent no reply to 'step' within 3 s (hung?)"),
    ],
    ids=["raises", "dies", "hangs"],
)
def test_a_faulty_worker_fails_the_run_clearly_and_leaves_nothing(tmp_path, faults, what):
    envs: list[FakeShardedEnv] = []

    def factory(task, backend, num_envs, seed):
        envs.append(FakeShardedEnv(num_envs, seed, workers=2, faults=faults, timeout_s=3.0))
        return envs[-1]

    run_dir = tmp_path / "run"
    start = time.perf_counter()
    with pytest.raises(CollectorError) as info:
        train(tiny_config(iterations=40), run_dir=run_dir, env_factory=factory)
    assert time.perf_counter() - start < 30
    message = str(info.value)
    assert message.startswith("collector thread failed at iteration 7: EnvWorkerError: ")
    assert "env worker 1 (envs 4-7, pid " in message and message.endswith(what)
    s = read_summary(run_dir)
    assert s["status"] == "failed" and s["complete"] is False
    assert "env worker 1 (envs 4-7" in s["incomplete_reason"]
    assert len(s["rows_all"]) == 7 and s["rows"]
    (env,) = envs
    wait_gone(env.shards.pids, env.shards.shm_name, timeout=10.0)


@pytest.mark.slow
def test_ctrl_c_stops_the_run_and_every_worker(tmp_path):
    """Ctrl-C reaches the whole process group: the workers ignore it, the runner stops after
    the iteration, checkpoints, and then ends the workers and frees the shared memory."""
    run_dir, marker = tmp_path / "run", tmp_path / "workers.json"
    environ = with_repo_on_path(dict(os.environ))
    environ.update(
        FLASHSAC_BENCH_ENV_FACTORY="tests.fakes.sharded_env:make_env",
        FAKE_SHARD_MARKER=str(marker),
        OMP_NUM_THREADS="1",
    )
    args = [*cli_overrides(8, 100_000), "backend.workers=2", f"hydra.run.dir={run_dir}"]
    log = tmp_path / "output.txt"  # stdout (the progress lines) and stderr
    with open(log, "w") as output:
        proc = subprocess.Popen(
            [sys.executable, "-m", "flashsac_bench", *args, "run.log_every=4"],
            cwd=tmp_path,
            env=environ,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 180
        while "iter 8/" not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-3000:]
            time.sleep(0.2)
        assert "iter 8/" in log.read_text() and marker.exists(), log.read_text()[-3000:]
        workers = json.loads(marker.read_text())
        os.killpg(proc.pid, signal.SIGINT)  # in the training loop now
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = log.read_text()
    assert proc.returncode == 128 + signal.SIGINT, err[-3000:]
    s = read_summary(run_dir)
    assert s["status"] == "interrupted" and s["training_config"]["env_workers"] == 2
    # each tick's wait for its slowest worker, on the workers' clocks
    assert all(r["straggler_ms"] >= 0 for r in s["rows_all"])
    assert load_checkpoint(resolve_resume_path(run_dir))["iteration"] == s["iterations_done"] > 0
    wait_gone(workers["pids"], workers["shm"], timeout=10.0)
    assert "Traceback" not in err

"""Helpers for the runner tests: tiny configs, CLI subprocesses against the fake env."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from flashsac_bench.config import Config, to_config

REPO = Path(__file__).resolve().parents[2]

# Small enough that one u2 update cycle takes a few ms on 2 CPU cores.
TINY_LEARNER = {"actor_hidden_dim": 16, "critic_hidden_dim": 16, "num_atoms": 11}


def tiny_config(
    *,
    num_envs: int = 8,
    iterations: int = 12,
    batch_size: int = 32,
    replay_buffer_n: int = 16,
    learning_starts: int = 4,
    update: str = "u2",
    path: str = "eager",
    hardware: dict[str, Any] | None = None,
    backend: dict[str, Any] | None = None,
    logger: str = "none",
    **run: Any,
) -> Config:
    ups = {"u2": 2, "u8": 8}[update]
    cpu = {"name": "cpu", "device": "cpu", "dtype": "float32", "torch_threads": 1}
    return to_config(
        {
            "update": {"updates_per_step": ups, "policy_frequency": 2},
            "path": {"name": path},
            "hardware": hardware or cpu,
            "backend": backend or {"mode": "threads"},
            "learner": TINY_LEARNER,
            "replay": {
                "batch_size": batch_size,
                "replay_buffer_n": replay_buffer_n,
                "learning_starts": learning_starts,
            },
            "run": {
                "num_envs": num_envs,
                "iterations": iterations,
                "summary_last": 1000,
                "log_every": 4,
                "progress": "plain",
                **run,
            },
            "logger": {"name": logger},
        }
    )


def cli_overrides(num_envs: int = 16, iterations: int = 30) -> list[str]:
    """Overrides of a tiny CLI run (learning starts at iteration 4)."""
    return [
        "hardware=cpu",
        "hardware.torch_threads=1",
        f"run.num_envs={num_envs}",
        f"run.iterations={iterations}",
        "run.progress=plain",
        "replay.batch_size=32",
        "replay.replay_buffer_n=16",
        "replay.learning_starts=4",
        *(f"learner.{k}={v}" for k, v in TINY_LEARNER.items()),
    ]


def with_repo_on_path(environ: dict[str, str]) -> dict[str, str]:
    """`environ` with the repository root first on PYTHONPATH: a subprocess imports
    tests.fakes whatever its working directory."""
    path = os.pathsep.join([str(REPO), environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**environ, "PYTHONPATH": path}


def fake_env_environ(**extra: str) -> dict[str, str]:
    env = with_repo_on_path(dict(os.environ))
    env["FLASHSAC_BENCH_ENV_FACTORY"] = "tests.fakes.fake_env:make_env"
    # Keep numpy's BLAS from oversubscribing the 2 CI cores across parallel submitit jobs.
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update(extra)
    return env


def run_cli(
    args: list[str], *, env: dict[str, str] | None = None, timeout: float = 240, cwd: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flashsac_bench", *args],
        cwd=cwd,
        env=env if env is not None else fake_env_environ(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def read_summary(run_dir: Path) -> dict[str, Any]:
    with open(run_dir / "summary.json") as f:
        return json.load(f)


def timing_free(row: dict[str, Any]) -> dict[str, Any]:
    """A summary row without its timings (what two runs of one seed must agree on)."""
    return {k: v for k, v in row.items() if not k.endswith(("_ms", "_s", "_per_s"))}


def final_checkpoint_tensors(run_dir: Path) -> dict[str, Any]:
    """Every tensor of the run's last checkpoint (learner, replay, env state), by its path."""
    import torch

    ckpt = sorted((run_dir / "checkpoints").glob("iter_*.pt"))[-1]
    out: dict[str, Any] = {}

    def walk(tree: Any, prefix: str) -> None:
        if isinstance(tree, torch.Tensor):
            out[prefix] = tree
        elif isinstance(tree, dict):
            for key, value in tree.items():
                walk(value, f"{prefix}/{key}")

    walk(torch.load(ckpt, map_location="cpu", weights_only=True), "")
    return out

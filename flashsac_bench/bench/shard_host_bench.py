"""Host cost of one G1 worker shard's control step, without its physics.

In a worker process (`envs.shards`) a control step is MuJoCo's physics, then numpy work whose
cost is mostly per-call overhead, nearly independent of the shard's size: observations, the
observation noise, rewards, terminations, and the resets of finished envs. A worker holds a few
dozen envs and every worker must finish before the tick does, so this fixed cost sits on the
collector's critical path.

Timed with the physics stubbed out (the state stays where a few real steps left it):
- a step with no finished env (the physics call is a no-op, everything else runs);
- a reset of 2 envs (the common case early in training, when episodes last ~35 steps).

`baseline`: the same measurements of another checkout's `flashsac_bench` (e.g. a git worktree
of an earlier commit), loaded into the same process (`load_tree`) and interleaved round by round,
so that a machine's slow and fast phases hit both alike. Both shards get the same actions and
the same resets; their outputs are compared bit for bit at the end (`same_outputs`).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import time
from collections.abc import Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import numpy as np

from flashsac_bench.runner.timing import summarize

PACKAGE = "flashsac_bench"


class _TreeFinder:
    """Resolves the package and its submodules from one source root (ahead of any other finder,
    e.g. an editable install's, which would otherwise hand back the installed tree)."""

    def __init__(self, root: str) -> None:
        self.root = root

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: Any = None):
        if fullname == PACKAGE:
            return importlib.machinery.PathFinder.find_spec(fullname, [self.root])
        if fullname.startswith(PACKAGE + "."):
            return importlib.machinery.PathFinder.find_spec(fullname, path)
        return None


@contextmanager
def _package_swapped_out():
    """Hide this process's `flashsac_bench` modules for the duration; restore them after."""
    own = {k: sys.modules.pop(k) for k in list(sys.modules) if k.split(".")[0] == PACKAGE}
    try:
        yield
    finally:
        for k in [k for k in sys.modules if k.split(".")[0] == PACKAGE]:
            del sys.modules[k]
        sys.modules.update(own)


def load_tree(root: str, modules: Sequence[str]) -> dict[str, ModuleType]:
    """Import `modules` (dotted names under flashsac_bench) from the checkout at `root`, as a copy
    separate from this process's own package, which is left as it was."""
    finder = _TreeFinder(root)
    with _package_swapped_out():
        sys.meta_path.insert(0, finder)
        try:
            loaded = {name: importlib.import_module(name) for name in modules}
        finally:
            sys.meta_path.remove(finder)
    return loaded


class _Subject:
    """One implementation's shard of `num_envs` G1 envs, physics stubbed after a few steps."""

    def __init__(self, g1_shard: ModuleType, task_cls: type, num_envs: int) -> None:
        cfg = task_cls()
        model = g1_shard.build_task_model(cfg)
        spec = g1_shard.array_spec(model)
        # One block laid out as the vector env lays it out (envs.shards.InlineShards).
        self._block = np.zeros(spec.nbytes(num_envs), dtype=np.uint8)
        self.arrays = spec.views(self._block, num_envs)
        self.shard = g1_shard.G1Shard(cfg, 0, num_envs, 1, 1, self.arrays)
        self.shard.reset()
        self.arrays["actions"][:] = 0.05
        for _ in range(5):  # a state that real physics produced
            self.shard.step(1.0)
        self.shard.physics.step = lambda nsub, **kw: None
        self.reset_ids = np.array([0, num_envs // 2])
        self.step_s: list[float] = []
        self.reset_s: list[float] = []

    def sample(self, count: int) -> None:
        sh = self.shard
        for _ in range(count):
            sh.episode_step[:] = 5  # nobody truncates; the frozen state terminates nobody
            t = time.perf_counter()
            sh.step(1.0)
            t1 = time.perf_counter()
            sh._reset_envs(self.reset_ids)
            t2 = time.perf_counter()
            self.step_s.append(t1 - t)
            self.reset_s.append(t2 - t1)

    def result(self) -> dict[str, float]:
        step = summarize(t * 1e6 for t in self.step_s)
        reset = summarize(t * 1e6 for t in self.reset_s)
        return {
            "step_median_us": step["median"],
            "step_p90_us": step["p90"],
            "reset2_median_us": reset["median"],
            "reset2_p90_us": reset["p90"],
        }

    def close(self) -> None:
        self.shard.close()


def time_shard_host(
    num_envs: int,
    rounds: int = 20,
    per_round: int = 50,
    baseline: str | None = None,
) -> dict[str, Any]:
    """Median / p90 microseconds of a shard's host step and of a 2-env reset; with `baseline`,
    the other checkout's as well, interleaved, and whether both wrote the same bits."""
    from flashsac_bench.config.task import TaskConfig
    from flashsac_bench.envs import g1_shard

    subjects = {"current": _Subject(g1_shard, TaskConfig, num_envs)}
    if baseline is not None:
        mods = load_tree(baseline, ["flashsac_bench.envs.g1_shard", "flashsac_bench.config.task"])
        subjects["baseline"] = _Subject(
            mods["flashsac_bench.envs.g1_shard"],
            mods["flashsac_bench.config.task"].TaskConfig,
            num_envs,
        )
    try:
        order = list(subjects.values())
        for r in range(rounds):
            for s in order if r % 2 == 0 else order[::-1]:
                s.sample(per_round)
        out: dict[str, Any] = {"num_envs": num_envs, "samples": rounds * per_round}
        out.update({name: s.result() for name, s in subjects.items()})
        if baseline is not None:
            a, b = subjects["current"].arrays, subjects["baseline"].arrays
            out["same_outputs"] = a.keys() == b.keys() and all(
                np.array_equal(a[k].view(np.uint8), b[k].view(np.uint8)) for k in a
            )
        return out
    finally:
        for s in subjects.values():
            s.close()

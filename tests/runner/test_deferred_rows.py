"""Iteration k's row is built during iteration k+1, while the envs step (off the serial path),
and every row is complete when it is built."""

from __future__ import annotations

from flashsac_bench.cli.train import train
from flashsac_bench.learner.state import METRICS
from flashsac_bench.runner.collector import Collector
from flashsac_bench.runner.records import Records
from tests.fakes.fake_env import FakeEnv
from tests.fakes.runs import read_summary, tiny_config

ITERATIONS = 10


def test_each_row_is_built_while_the_next_tick_steps(tmp_path, monkeypatch):
    in_flight: list[int] = []  # the tick submitted and not joined yet
    built: list[tuple[int, list[int]]] = []  # (row's iteration, ticks in flight then)
    submit, wait, build = Collector.submit, Collector.wait, Records.build_row

    def spy_submit(self, tick, want_metrics):
        in_flight.append(tick)
        return submit(self, tick, want_metrics)

    def spy_wait(self):
        result = wait(self)
        in_flight.pop()
        return result

    def spy_build(self, values, progress):
        if self.pending is not None:
            built.append((self.pending.iteration, list(in_flight)))
        return build(self, values, progress)

    monkeypatch.setattr(Collector, "submit", spy_submit)
    monkeypatch.setattr(Collector, "wait", spy_wait)
    monkeypatch.setattr(Records, "build_row", spy_build)
    cfg = tiny_config(iterations=ITERATIONS, checkpoint_every=0)
    train(cfg, run_dir=tmp_path / "run", env_factory=lambda t, b, n, s: FakeEnv(n, s))

    assert [k for k, _ in built] == list(range(ITERATIONS))
    # rows 0..8 are built while the next tick steps; the last one after the loop
    assert [ticks for _, ticks in built] == [[k + 1] for k in range(ITERATIONS - 1)] + [[]]


def test_every_row_is_complete_and_timed(tmp_path):
    cfg = tiny_config(iterations=ITERATIONS, checkpoint_every=4)  # checkpoints record rows too
    train(cfg, run_dir=tmp_path / "run", env_factory=lambda t, b, n, s: FakeEnv(n, s))
    s = read_summary(tmp_path / "run")
    rows = s["rows_all"]
    assert [r["iteration"] for r in rows] == list(range(ITERATIONS))
    learning = [r for r in rows if r["learning"]]
    assert learning and learning[-1]["iteration"] == ITERATIONS - 1
    for r in learning:  # the late values arrived, the last row's too (read after a sync)
        assert r["learner_train_ms"] > 0
        assert all(r[key] is not None for key in METRICS)
    for r in rows:
        assert r["iter_ms"] > 0 and r["bookkeeping_ms"] > 0
    times = [r["time_s"] for r in rows]
    assert times == sorted(times) and times[0] > 0

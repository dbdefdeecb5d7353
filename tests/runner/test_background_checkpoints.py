"""Periodic checkpoints (run.checkpoint_every) are written while training goes on, hold exactly
their iteration's state (what a run that ends at that iteration writes inline), and the
writer's thread always ends, also when the write or the run fails (runner.run_dir.checkpoints)."""

from __future__ import annotations

import os
import tempfile
import threading
import time

import numpy as np
import pytest
import torch

from flashsac_bench.cli.train import train
from flashsac_bench.runner import checkpoint as ckpt_mod
from flashsac_bench.runner.checkpoint import checkpoint_path, load_checkpoint
from flashsac_bench.runner.collector import CollectorError
from flashsac_bench.runner.run_dir import checkpoints as run_dir_checkpoints
from flashsac_bench.runner.run_dir.checkpoints import THREAD_NAME, CheckpointWriter
from flashsac_bench.runner.writes import DiskFullError
from tests.fakes.fake_env import FakeEnv
from tests.fakes.runs import read_summary, timing_free, tiny_config

EVERY, ITERATIONS = 3, 9  # checkpoints at 3 and 6 (periodic), 9 (final, always inline)


class _CountingEnv(FakeEnv):
    """Counts its steps (`stepped` is set once `until` steps are done)."""

    def __init__(self, *args, until: int = 10**9, **kw) -> None:
        super().__init__(*args, **kw)
        self.steps, self.until, self.stepped = 0, until, threading.Event()

    def step(self, actions):
        out = super().step(actions)
        self.steps += 1
        if self.steps >= self.until:
            self.stepped.set()
        return out


def _writer_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


def _same_payload(a: dict, b: dict) -> None:
    assert a["iteration"] == b["iteration"]
    for key, t in a["learner"]["tensors"].items():
        assert torch.equal(t, b["learner"]["tensors"][key]), key
    assert torch.equal(a["replay"]["storage"], b["replay"]["storage"])
    assert (a["replay"]["cursor"], a["replay"]["count"]) == (
        b["replay"]["cursor"],
        b["replay"]["count"],
    )
    for key in ("obs", "critic_obs", "dones"):
        assert np.array_equal(a["staging"][key], b["staging"][key]), key
    assert [timing_free(r) for r in a["rows_all"]] == [timing_free(r) for r in b["rows_all"]]
    assert len(a["rows_all"]) == a["iteration"]  # no later row leaked into the file


@pytest.fixture(scope="module")
def inline_runs(tmp_path_factory):
    """Runs that end at iteration 3, 6 and 9: each writes its one checkpoint inline."""
    runs = {}
    for k in range(EVERY, ITERATIONS + 1, EVERY):
        runs[k] = tmp_path_factory.mktemp("inline") / f"run{k}"
        cfg = tiny_config(iterations=k, checkpoint_every=0)
        train(cfg, run_dir=runs[k], env_factory=lambda t, b, n, s: FakeEnv(n, s))
    return runs


def test_a_background_checkpoint_is_written_while_training_goes_on(
    inline_runs, tmp_path, monkeypatch
):
    """Each periodic write waits until the loop has stepped the envs two more times: with an
    inline write the loop could not, and the wait would time out."""
    env: dict[str, _CountingEnv] = {}

    def factory(task, backend, num_envs, seed):
        env["e"] = _CountingEnv(num_envs, seed)
        return env["e"]

    real = run_dir_checkpoints.save_checkpoint
    overlapped: list[int] = []

    def save_after_two_more_steps(path, payload):
        e = env["e"]
        if threading.current_thread().name == THREAD_NAME:
            e.stepped.clear()
            e.until = payload["iteration"] + 2
            overlapped.append(payload["iteration"] if e.stepped.wait(timeout=30) else -1)
        return real(path, payload)

    monkeypatch.setattr(run_dir_checkpoints, "save_checkpoint", save_after_two_more_steps)
    run = tmp_path / "run"
    train(
        tiny_config(iterations=ITERATIONS, checkpoint_every=EVERY), run_dir=run, env_factory=factory
    )

    assert overlapped == [3, 6]  # both periodic writes overlapped two later iterations
    for k in (3, 6, 9):  # ... and hold the state of a run that ends there (written inline)
        _same_payload(
            load_checkpoint(checkpoint_path(run, k)),
            load_checkpoint(checkpoint_path(inline_runs[k], k)),
        )
        listed = read_summary(inline_runs[k])["checkpoints"]
        assert [(c["iteration"], c["background"]) for c in listed] == [(k, False)]
    listed = read_summary(run)["checkpoints"]
    assert [(c["iteration"], c["background"]) for c in listed] == [(3, True), (6, True), (9, False)]
    assert all(0 <= c["blocking_s"] <= c["s"] for c in listed)
    assert _writer_threads() == []


def test_a_failed_background_write_fails_the_run(tmp_path, monkeypatch):
    def to_dev_full(folder, name):  # every write: ENOSPC, as on a full disk
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
        os.close(fd)
        return open("/dev/full", "wb"), tmp  # noqa: SIM115 - closed by atomic_write

    monkeypatch.setattr(ckpt_mod, "_open_tmp", to_dev_full)
    run = tmp_path / "run"
    with pytest.raises(DiskFullError, match="no space left on device.*iter_0000003.pt"):
        train(
            tiny_config(iterations=ITERATIONS, checkpoint_every=EVERY),
            run_dir=run,
            env_factory=lambda t, b, n, s: FakeEnv(n, s),
        )
    summary = read_summary(run)
    assert summary["status"] == "failed" and summary["checkpoints"] == []
    assert summary["iterations_done"] < ITERATIONS  # it stopped at the next collection
    assert list((run / "checkpoints").iterdir()) == []  # neither the file nor its temp file
    assert _writer_threads() == []


def test_a_run_that_fails_during_a_write_still_completes_that_checkpoint(tmp_path, monkeypatch):
    real = run_dir_checkpoints.save_checkpoint
    release = threading.Event()

    def slow_save(path, payload):
        release.wait(timeout=30)  # the run fails meanwhile
        return real(path, payload)

    monkeypatch.setattr(run_dir_checkpoints, "save_checkpoint", slow_save)
    failing = {"e": None}

    def factory(task, backend, num_envs, seed):
        failing["e"] = FakeEnv(num_envs, seed, fail_at=5)
        return failing["e"]

    closing = CheckpointWriter.close

    def close_after_release(self):
        release.set()  # let the write go on only once the failure is being handled
        closing(self)

    monkeypatch.setattr(CheckpointWriter, "close", close_after_release)
    run = tmp_path / "run"
    with pytest.raises(CollectorError):
        train(
            tiny_config(iterations=ITERATIONS, checkpoint_every=EVERY),
            run_dir=run,
            env_factory=factory,
        )
    assert _writer_threads() == []
    ckpt = load_checkpoint(checkpoint_path(run, 3))  # whole and readable
    assert ckpt["iteration"] == 3
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == [
        "iter_0000003.pt",
        "latest.txt",
    ]


def test_the_writer_runs_one_write_at_a_time_and_reports_its_error():
    writer = CheckpointWriter()
    gate = threading.Event()
    writer.start(gate.wait, {"n": 1})
    with pytest.raises(RuntimeError, match="still in flight"):
        writer.start(lambda: None, {"n": 2})
    assert writer.collect(wait=False) is None  # not finished yet
    gate.set()
    done = writer.collect(wait=True)
    assert done is not None and done["n"] == 1 and done["write_s"] >= 0
    assert writer.collect(wait=True) is None  # collected once

    def boom():
        raise ValueError("bad write")

    writer.start(boom, {})
    with pytest.raises(ValueError, match="bad write"):
        writer.collect(wait=True)
    writer.start(boom, {})
    writer.close()  # logged, not raised: the run's own error comes first
    assert not writer.busy and _writer_threads() == []


def test_the_ring_copy_reuses_its_buffer_only_between_writes():
    writer = CheckpointWriter()
    rows = torch.arange(12.0).reshape(4, 3)
    first = writer.ring_copy(rows)
    assert torch.equal(first, rows) and first.data_ptr() != rows.data_ptr()
    rows += 1
    again = writer.ring_copy(rows)  # the same buffer, now holding the new rows
    assert again.data_ptr() == first.data_ptr() and torch.equal(again, rows)
    grown = writer.ring_copy(torch.ones(5, 3))  # exactly the stored rows (torch.save writes
    assert grown.shape == (5, 3)  # a view's whole storage)
    gate = threading.Event()
    writer.start(gate.wait, {})
    with pytest.raises(RuntimeError, match="still being written"):
        writer.ring_copy(rows)
    gate.set()
    writer.close()


def test_the_full_ring_buffer_is_reserved_ahead_and_then_reused():
    writer = CheckpointWriter()
    writer.reserve_ring((4, 3), torch.float32)
    assert writer.collect(wait=True) == {"reserved": (4, 3), "write_s": pytest.approx(0, abs=5)}
    assert writer.buffer_bytes == 4 * 3 * 4
    reserved = writer.ring_copy(torch.ones(4, 3))
    assert writer.ring_copy(torch.full((4, 3), 2.0)).data_ptr() == reserved.data_ptr()
    partial = writer.ring_copy(torch.ones(2, 3))  # a ring not full yet: a buffer of its own ...
    assert partial.shape == (2, 3) and partial.data_ptr() != reserved.data_ptr()
    assert writer.ring_copy(torch.ones(4, 3)).data_ptr() == reserved.data_ptr()  # ... kept
    writer.close()
    assert writer.buffer_bytes == 0  # freed with the run


def test_a_run_reserves_its_ring_buffer_only_for_periodic_checkpoints(tmp_path, monkeypatch):
    shapes = []
    real = CheckpointWriter.reserve_ring
    monkeypatch.setattr(
        CheckpointWriter, "reserve_ring", lambda self, s, d: (shapes.append(s), real(self, s, d))
    )
    for every, listed in ((3, [3, 4]), (0, [4])):
        run = tmp_path / f"run{every}"
        cfg = tiny_config(iterations=4, checkpoint_every=every)
        train(cfg, run_dir=run, env_factory=lambda t, b, n, s: FakeEnv(n, s))
        assert [c["iteration"] for c in read_summary(run)["checkpoints"]] == listed
    assert shapes == [(8 * 16, shapes[0][1])]  # num_envs x replay_buffer_n rows, once
    assert _writer_threads() == []


def test_an_interrupt_during_a_write_keeps_both_checkpoints(tmp_path, monkeypatch):
    """Ctrl-C while the periodic checkpoint is still being written: the run stops after the
    iteration, waits for that write, then writes its final checkpoint (inline)."""
    import signal

    real = run_dir_checkpoints.save_checkpoint

    def slow_in_background(path, payload):
        if threading.current_thread().name == THREAD_NAME:
            time.sleep(0.5)  # still in flight when the signal arrives at tick 4
        return real(path, payload)

    monkeypatch.setattr(run_dir_checkpoints, "save_checkpoint", slow_in_background)
    run = tmp_path / "run"
    with pytest.raises(SystemExit) as ended:
        train(
            tiny_config(iterations=ITERATIONS, checkpoint_every=EVERY),
            run_dir=run,
            env_factory=lambda t, b, n, s: FakeEnv(n, s, signal_at=(4, signal.SIGINT)),
        )
    assert ended.value.code == 128 + signal.SIGINT
    summary = read_summary(run)
    assert summary["status"] == "interrupted"
    listed = [(c["iteration"], c["background"]) for c in summary["checkpoints"]]
    assert listed == [(3, True), (5, False)]
    for k in (3, 5):
        assert load_checkpoint(checkpoint_path(run, k))["iteration"] == k
    assert _writer_threads() == []

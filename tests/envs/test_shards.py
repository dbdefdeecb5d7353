"""Worker-process shards: faults name the worker, and nothing outlives the env (processes,
shared memory), whether it is closed, fails, or its parent is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from flashsac_bench.envs.g1.cpu.shards import EnvWorkerError, split_ranges, straggler_ms
from tests.fakes.processes import SHM_DIR, created_segments, wait_gone
from tests.fakes.runs import with_repo_on_path
from tests.fakes.sharded_env import FakeShardedEnv, Faults

pytestmark = pytest.mark.skipif(not SHM_DIR.is_dir(), reason="needs POSIX shared memory (/dev/shm)")


def _actions(env: FakeShardedEnv, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (env.num_envs, env.action_dim))


def test_split_ranges_are_contiguous_and_balanced() -> None:
    assert split_ranges(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert split_ranges(4, 4) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    with pytest.raises(ValueError, match="cannot split 2 envs into 3"):
        split_ranges(2, 3)


def test_steps_state_and_close_free_everything() -> None:
    env = FakeShardedEnv(7, seed=3, workers=3)
    pids, shm = env.shards.pids, env.shards.shm_name
    assert len(pids) == 3 and len(set(pids)) == 3 and os.getpid() not in pids
    assert env.shards.call("pid") == pids  # each shard runs in its own worker
    assert (SHM_DIR / shm).exists()
    env.reset()
    for k in range(5):
        env.step(_actions(env, k))
    state = env.get_state()
    first = [env.step(_actions(env, 10 + k)).obs.copy() for k in range(15)]
    env.set_state(state)
    again = [env.step(_actions(env, 10 + k)).obs.copy() for k in range(15)]
    np.testing.assert_array_equal(np.array(first), np.array(again))
    env.close()
    wait_gone(pids, shm, timeout=5.0)
    env.close()  # idempotent
    with pytest.raises(EnvWorkerError, match="closed"):
        env.step(_actions(env))


def test_any_split_computes_the_same_envs() -> None:
    outs = []
    for workers in (1, 2, 3):
        env = FakeShardedEnv(6, seed=9, workers=workers)
        try:
            env.reset()
            outs.append([env.step(_actions(env, k)).final_critic_obs.copy() for k in range(30)])
        finally:
            env.close()
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])


def test_settle_hands_over_each_workers_rows_once_and_a_failing_hook_loses_no_reply() -> None:
    hooked = FakeShardedEnv(7, seed=3, workers=3)
    plain = FakeShardedEnv(7, seed=3, workers=3)
    try:
        hooked.reset(), plain.reset()
        hooked.shards.post("reset")  # an older command still unread: no hook for its replies
        plain.reset()
        hooked._actions[:] = _actions(hooked)
        hooked.shards.post("step")
        seen: dict[tuple[int, int], np.ndarray] = {}

        def copy_rows(lo: int, hi: int) -> None:
            assert (lo, hi) not in seen
            seen[(lo, hi)] = hooked.out.obs[lo:hi].copy()

        hooked.shards.settle(copy_rows)
        plain.step(_actions(plain))
        assert sorted(seen) == hooked.shards.ranges
        for (lo, hi), rows in seen.items():  # the rows were complete when handed over
            np.testing.assert_array_equal(rows, plain.out.obs[lo:hi])

        def boom(lo: int, hi: int) -> None:
            raise ValueError(f"boom at {lo}")

        hooked._actions[:] = _actions(hooked, 1)
        hooked.shards.post("step")
        with pytest.raises(ValueError, match="boom at"):
            hooked.shards.settle(boom)
        assert hooked.shards._unread == []  # every reply was read all the same
        plain.step(_actions(plain, 1))
        for k in (2, 3):  # so the next commands read their own replies
            np.testing.assert_array_equal(
                hooked.step(_actions(hooked, k)).obs, plain.step(_actions(plain, k)).obs
            )
    finally:
        hooked.close()
        plain.close()


def test_straggler_ms_is_the_last_worker_after_the_median_one():
    assert straggler_ms([1.0, 1.005, 1.001]) == pytest.approx(4.0)
    assert straggler_ms([2.0, 2.0]) == 0.0
    assert straggler_ms([3.0, 3.002]) == pytest.approx(1.0)  # median of two: their mean
    assert straggler_ms([]) is None and straggler_ms([1.0]) is None
    assert straggler_ms([None, None]) is None  # replies without a worker time (the start)


def test_each_workers_finish_is_timed_on_its_own_clock() -> None:
    """done_times come from the workers (perf_counter is system-wide), not from when the
    parent got round to reading each reply."""
    env = FakeShardedEnv(6, seed=0, workers=3)
    try:
        before = time.perf_counter()
        env.shards.call_each("nap", [(0.0,), (0.4,), (0.2,)])
        after = time.perf_counter()
        t0, t1, t2 = env.shards.done_times
        assert before <= t0 < t2 < t1 <= after
        assert t1 - t0 >= 0.3
        # the last worker against the median one
        assert straggler_ms(env.shards.done_times) == pytest.approx((t1 - t2) * 1e3)
        env.step(_actions(env))
        assert len(env.shards.done_times) == 3 and None not in env.shards.done_times
    finally:
        env.close()


@pytest.mark.parametrize(
    ("faults", "match"),
    [
        (
            Faults(fail_at=(3, 1)),
            r"env worker 1 \(envs 2-3, pid \d+\) failed in 'step': "
            r"RuntimeError: fake shard 1 exploded at tick 3$",
        ),
        (
            Faults(die_at=(3, 2)),
            r"env worker 2 \(envs 4-5, pid \d+\) died during 'step' "
            r"\(killed by SIGKILL\)",
        ),
        (
            Faults(hang_at=(3, 0)),
            r"env worker 0 \(envs 0-1, pid \d+\) sent no reply to 'step' "
            r"within 2 s \(hung\?\)",
        ),
    ],
    ids=["raises", "dies", "hangs"],
)
def test_a_faulty_worker_fails_the_step_naming_it_and_frees_everything(
    faults: Faults, match: str
) -> None:
    env = FakeShardedEnv(6, seed=0, workers=3, faults=faults, timeout_s=2.0)
    pids, shm = env.shards.pids, env.shards.shm_name
    env.reset()
    for k in range(3):
        env.step(_actions(env, k))
    start = time.monotonic()
    with pytest.raises(EnvWorkerError, match=match):
        env.step(_actions(env))
    assert time.monotonic() - start < 10
    wait_gone(pids, shm, timeout=10.0)  # the failing call already closed every worker


def test_startup_error_is_one_clear_line_and_leaves_nothing(monkeypatch) -> None:
    with created_segments(monkeypatch) as segments, pytest.raises(EnvWorkerError) as info:
        FakeShardedEnv(6, seed=0, workers=3, faults=Faults(fail_start=1))
    message = str(info.value)
    assert message.startswith("env worker 1 (envs 2-3, pid ")
    assert message.endswith(
        "failed to start: ValueError: fake shard 1 refuses to start (bad model file, say)"
    )
    assert "\n" not in message and "Traceback" not in message
    (segment,) = segments  # the one block the env created, and nothing of it is left
    wait_gone([], segment, timeout=5.0)


def test_a_start_not_waited_for_fails_the_first_command_the_same_way() -> None:
    # wait_for_start=False (the G1 env's choice) returns while the workers start; the first
    # command waits for them, and a failed start is the same one line, with nothing left
    env = FakeShardedEnv(6, seed=0, workers=3, faults=Faults(fail_start=1), wait_for_start=False)
    pids, shm = env.shards.pids, env.shards.shm_name
    env.shards.post("reset")  # queued behind the start replies
    with pytest.raises(EnvWorkerError) as info:
        env.step(_actions(env))
    message = str(info.value)
    assert message.startswith("env worker 1 (envs 2-3, pid ")
    assert message.endswith(
        "failed to start: ValueError: fake shard 1 refuses to start (bad model file, say)"
    )
    wait_gone(pids, shm)


def test_posted_commands_are_read_in_order_and_closing_while_starting_frees_everything() -> None:
    waited = FakeShardedEnv(5, seed=2, workers=2)
    posted = FakeShardedEnv(5, seed=2, workers=2, wait_for_start=False)
    try:
        waited.reset()
        posted.shards.post("reset")  # replies unread until the next command
        for k in range(3):
            a = _actions(waited, k)
            np.testing.assert_array_equal(waited.step(a).obs, posted.step(a).obs)
        assert posted.shards._unread == []
    finally:
        waited.shards.close()
        posted.shards.close()
    # closed before any command: the workers may still be importing
    early = FakeShardedEnv(4, seed=0, workers=2, wait_for_start=False)
    pids, shm = early.shards.pids, early.shards.shm_name
    early.shards.close()
    wait_gone(pids, shm)
    with pytest.raises(EnvWorkerError, match="closed"):
        early.shards.post("reset")


_PARENT = textwrap.dedent(
    """
    import signal, time
    # Ctrl-C as a terminal's python has it, also where the harness started us with SIGINT
    # ignored (a background job of a non-interactive shell inherits SIG_IGN)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from tests.fakes.sharded_env import FakeShardedEnv
    env = FakeShardedEnv(6, seed=0, workers=3)
    env.reset()
    print(" ".join(map(str, env.shards.pids)), env.shards.shm_name, flush=True)
    while True:
        env.step(env.out.obs[:, :3] * 0)
        time.sleep(0.01)
    """
)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
def test_nothing_outlives_a_parent_that_is_killed_or_interrupted(sig: signal.Signals) -> None:
    # SIGINT goes to the whole process group, as a terminal's Ctrl-C does: the workers ignore it
    # and the parent's KeyboardInterrupt closes them; SIGKILL leaves the parent no say at all.
    proc = subprocess.Popen(
        [sys.executable, "-c", _PARENT],
        env=with_repo_on_path(dict(os.environ)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        *pids, shm = proc.stdout.readline().split() or [proc.stderr.read()]
        worker_pids = [int(p) for p in pids]
        assert len(worker_pids) == 3, shm
        time.sleep(0.3)
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        proc.wait(timeout=20)
        wait_gone(worker_pids, shm, timeout=15.0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

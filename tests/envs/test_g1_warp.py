"""backend=mjwarp on Warp's CPU device against the CPU backend: the physics (MuJoCo Warp in
float32 against MuJoCo in float64), the task's rows over 60 control steps with resets,
terminations, randomization and curriculum changes, and a bit-exact continuation from state.

Tolerances (each about ten times the largest difference measured on the CI machine):
  physics from the same states and controls, 21 control steps: qpos 4e-5, qvel 2.5e-3,
  sensors 5e-5;
  rows, both envs free-running for 60 steps: obs / critic obs 2e-4, reward and every weighted
  term 2e-5; terminated, truncated, episode lengths, random-stream counters and the curriculum
  scale exactly equal;
  rows with the CPU env put into the Warp env's state before every step: obs 1e-4, reward 5e-6.
"""

from __future__ import annotations

import itertools
import threading
import time

import mujoco
import numpy as np
import pytest
import torch

from flashsac_bench.config.backend import MjwarpConfig, MujocoConfig, WarpOptions
from flashsac_bench.config.task import CurriculumConfig, TaskConfig
from flashsac_bench.envs import make_env
from flashsac_bench.envs.contract.api import DeviceEnvStep, check_device_step
from flashsac_bench.envs.g1.cpu.batched import STATE_SPEC, BatchedMujoco
from flashsac_bench.envs.g1.cpu.shard import build_task_model
from flashsac_bench.envs.g1.layout import G1Layout

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("mjwarp")]

N = 6
STEPS = 60
# Short episodes (resets by truncation at steps 25 and 50), a height limit the random actions
# cross (terminations), and a curriculum that moves from its first finished episode on.
TASK = TaskConfig(
    episode_length_s=0.5,
    termination_min_height=0.7,
    curriculum=CurriculumConfig(initial_scale=0.1),
)
ROWS = ("obs", "critic_obs", "final_obs", "final_critic_obs")


def _warp(task: TaskConfig = TASK, n: int = N, seed: int = 5):
    """On Warp's CPU device, also on a machine with a GPU (the GPU's tests: test_g1_warp_gpu)."""
    return make_env(task, MjwarpConfig(warp=WarpOptions(device="cpu")), n, seed)


def _cpu(task: TaskConfig = TASK, n: int = N, seed: int = 5):
    return make_env(task, MujocoConfig(mode="threads", num_threads=1), n, seed)


def _actions(n: int = N, steps: int = STEPS, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (steps, n, 29)).astype(np.float32)


def test_physics_matches_cpu_mujoco() -> None:
    from flashsac_bench.envs.g1.warp.physics import WarpPhysics

    model = build_task_model(TaskConfig())
    lay = G1Layout.from_model(model)
    n = 4
    rng = np.random.default_rng(3)
    kp, kd = rng.uniform(0.9, 1.1, n), rng.uniform(0.9, 1.1, n)
    qpos = np.tile(lay.stand_qpos, (n, 1))
    qvel = np.zeros((n, model.nv))
    qvel[:, :6] = rng.uniform(-0.5, 0.5, (n, 6))
    qpos32, qvel32 = qpos.astype(np.float32), qvel.astype(np.float32)  # both start from these
    cpu = BatchedMujoco(model, n, 1)
    cpu.set_gain_scales(range(n), kp, kd)
    cpu.reset_envs(range(n), qpos32.astype(np.float64), qvel32.astype(np.float64))
    gpu = WarpPhysics(model, n, "cpu", nconmax=48, njmax=256)
    every = torch.ones(n, dtype=torch.bool)
    gpu.set_gain_scales(every, torch.as_tensor(kp), torch.as_tensor(kd))
    gpu.reset_worlds(every, torch.as_tensor(qpos32), torch.as_tensor(qvel32))
    worst = [0.0, 0.0]
    for a in rng.uniform(-0.5, 0.5, (21, n, 29)):
        ctrl = (lay.default_joint_pos + a).astype(np.float32).astype(np.float64)
        cpu.ctrl[:, lay.actuators] = ctrl
        gpu.ctrl[:, torch.as_tensor(lay.actuators)] = torch.as_tensor(ctrl, dtype=torch.float32)
        cpu.step(3)
        gpu.step(3)
        worst[0] = max(worst[0], np.abs(gpu.qpos.numpy() - cpu.qpos).max())
        worst[1] = max(worst[1], np.abs(gpu.qvel.numpy() - cpu.qvel).max())
    np.testing.assert_allclose(gpu.sensordata.numpy(), cpu.sensordata, atol=5e-5)
    assert worst[0] < 4e-5 and worst[1] < 2.5e-3, worst
    assert np.abs(cpu.qpos - qpos).max() > 1e-2  # the robots moved: the comparison can fail
    cpu.close()


def _compare_rows(warp_env, cpu_env, actions, sync: bool) -> dict[str, float]:
    """Both envs stepped with `actions` (the CPU env first put into the Warp env's state when
    `sync`); the largest difference of every float row, the discrete ones asserted equal."""
    worst: dict[str, float] = {}
    events = {"truncated": 0, "terminated": 0}
    for k, a in enumerate(actions):
        if sync:
            _put_cpu_state(cpu_env, warp_env)
        step = warp_env.step(torch.as_tensor(a, device=warp_env.device))
        if k == 0:
            check_device_step(warp_env, step)
        sw, sc = _on_host(step), cpu_env.step(a)
        for name in ("terminated", "truncated", "episode_length"):
            np.testing.assert_array_equal(
                getattr(sw, name).numpy(), getattr(sc, name), err_msg=f"{name} at step {k}"
            )
        events["truncated"] += int(sc.truncated.sum())
        events["terminated"] += int(sc.terminated.sum())
        pairs = [(name, getattr(sw, name), getattr(sc, name)) for name in (*ROWS, "reward")]
        pairs += [(f"term/{t}", sw.reward_terms[t], sc.reward_terms[t]) for t in sc.reward_terms]
        for name, got, want in pairs:
            worst[name] = max(worst.get(name, 0.0), float(np.abs(got.numpy() - want).max()))
        assert float(warp_env.penalty_scale) == cpu_env.penalty_scale, f"scale at step {k}"
    assert events["truncated"] >= 1 and events["terminated"] >= 1, events  # both kinds of reset
    counters = cpu_env._shards.shard.rng.counters.astype(np.int64)
    np.testing.assert_array_equal(warp_env.rng.counters.cpu().numpy(), counters)
    assert cpu_env.penalty_scale < TASK.curriculum.initial_scale  # the curriculum moved
    return worst


def test_rows_match_the_cpu_backend_free_running() -> None:
    with _warp() as w, _cpu() as c:
        obs_w, critic_w = w.reset()
        obs_c, critic_c = c.reset()
        np.testing.assert_allclose(obs_w.numpy(), obs_c, atol=1e-6)
        np.testing.assert_allclose(critic_w.numpy(), critic_c, atol=1e-6)
        worst = _compare_rows(w, c, _actions(), sync=False)
        mw, mc = w.metrics(), c.metrics()
    assert all(worst[name] < 2e-4 for name in ROWS), worst
    assert all(v < 2e-5 for k, v in worst.items() if k not in ROWS), worst
    assert mw.keys() == mc.keys()
    for key in mc:
        assert mw[key] == pytest.approx(mc[key], rel=1e-5, abs=1e-6), key


def _put_cpu_state(cpu_env, warp_env) -> None:
    """The CPU env's physics := the Warp env's state (float32, exact in float64)."""
    phys, p = cpu_env.physics, warp_env.physics
    qpos, qvel, warm = (
        t.cpu().to(torch.float64).numpy() for t in (p.qpos, p.qvel, p.qacc_warmstart)
    )
    rows = []
    for i, (m, d) in enumerate(zip(phys.models, phys.datas, strict=True)):
        d.qpos[:], d.qvel[:], d.qacc_warmstart[:] = qpos[i], qvel[i], warm[i]
        row = np.empty(mujoco.mj_stateSize(m, STATE_SPEC))
        mujoco.mj_getState(m, d, row, STATE_SPEC)
        rows.append(row)
    phys.set_state(np.stack(rows))


def test_rows_match_the_cpu_backend_from_the_same_states() -> None:
    with _warp() as w, _cpu() as c:
        w.reset()
        c.reset()
        worst = _compare_rows(w, c, _actions(seed=1), sync=True)
    assert all(worst[name] < 1e-4 for name in ROWS), worst
    assert all(v < 5e-6 for k, v in worst.items() if k not in ROWS), worst


def _on_host(step: DeviceEnvStep) -> DeviceEnvStep:
    """A copy of the step's tensors on the host."""
    return DeviceEnvStep(
        **{k: v.cpu().clone() for k, v in vars(step).items() if k != "reward_terms"},
        reward_terms={k: v.cpu().clone() for k, v in step.reward_terms.items()},
    )


def _snapshot(step: DeviceEnvStep) -> dict[str, np.ndarray]:
    host = _on_host(step)
    out = {k: getattr(host, k).numpy() for k in vars(host) if k != "reward_terms"}
    out.update({f"term/{k}": v.numpy() for k, v in host.reward_terms.items()})
    return out


def test_a_restored_state_continues_bit_for_bit() -> None:
    actions = torch.as_tensor(_actions(n=4, steps=40, seed=2))
    with _warp(n=4) as a:
        a.reset()
        want = [_snapshot(a.step(x)) for x in actions]
        want_metrics = a.metrics()
    with _warp(n=4) as b:
        b.reset()
        for x in actions[:20]:
            b.step(x)
        state = b.get_state()
    with _warp(n=4, seed=11) as c:  # another seed: set_state brings the streams' too
        c.reset()
        c.step(actions[0])
        c.set_state(state)
        got = [_snapshot(c.step(x)) for x in actions[20:]]
        got_metrics = c.metrics()
    ended = 0
    for w, g in zip(want[20:], got, strict=True):
        ended += int(w["terminated"].sum() + w["truncated"].sum())
        for key in w:
            np.testing.assert_array_equal(g[key], w[key], err_msg=key)
    assert got_metrics == want_metrics
    assert ended > 0  # resets happened after the restore


def test_the_deterministic_mode_runs_and_changes_nothing_on_the_cpu_device() -> None:
    """backend.warp.deterministic asks MuJoCo Warp for its order-stable kernels (what a GPU run
    needs to repeat itself); Warp's CPU device runs in order anyway: the same bits."""
    actions = torch.as_tensor(_actions(n=4, steps=20, seed=4))
    runs = []
    for deterministic in (False, True):
        warp = WarpOptions(device="cpu", deterministic=deterministic)
        with make_env(TASK, MjwarpConfig(warp=warp), 4, 5) as env:
            assert bool(env.physics.m.opt.deterministic) == deterministic
            # deterministic: the solver loop unrolled (its atomics allocate, which a CUDA
            # conditional graph node refuses: envs.g1.warp.physics)
            assert env.physics.m.opt.graph_conditional == (not deterministic)
            env.reset()
            runs.append([_snapshot(env.step(x)) for x in actions])
    for a, b in zip(*runs, strict=True):
        for key in a:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_envs_building_beside_each_other_take_turns_with_warp(monkeypatch) -> None:
    """Warp's current stream and its captures are the device's, not a thread's
    (envs.g1.warp.physics): two envs building on their threads at once, then the first one's
    capture on this thread, never run Warp calls at the same time. Each MuJoCo Warp call is
    widened by a sleep, so threads that did not take turns would overlap."""
    import mujoco_warp
    import warp

    spans: list[tuple[int, float, float]] = []

    def timed(fn):
        def call(*args, **kwargs):
            start = time.perf_counter()
            time.sleep(0.02)
            try:
                return fn(*args, **kwargs)
            finally:
                spans.append((threading.get_ident(), start, time.perf_counter()))

        return call

    for name in ("put_model", "make_data", "step1", "step2", "step"):
        monkeypatch.setattr(mujoco_warp, name, timed(getattr(mujoco_warp, name)))
    begun: dict[int, float] = {}  # a capture spans its begin to its end
    begin, end = warp.capture_begin, warp.capture_end

    def capture_begin(*args, **kwargs):
        begun[threading.get_ident()] = time.perf_counter()
        return begin(*args, **kwargs)

    def capture_end(*args, **kwargs):
        try:
            return end(*args, **kwargs)
        finally:
            ident = threading.get_ident()
            spans.append((ident, begun.pop(ident), time.perf_counter()))

    monkeypatch.setattr(warp, "capture_begin", capture_begin)
    monkeypatch.setattr(warp, "capture_end", capture_end)
    options = MjwarpConfig(warp=WarpOptions(device="cpu", background_build=True))
    with make_env(TASK, options, 2, 5) as a, make_env(TASK, options, 2, 6) as b:
        a.reset()
        b.reset()
        assert a.step_mode == b.step_mode == "warp_graph"
    threads = {ident for ident, _, _ in spans}
    assert len(threads) >= 2, threads  # the builds did run on threads of their own
    for (t1, start1, end1), (t2, start2, end2) in itertools.combinations(spans, 2):
        apart = end1 <= start2 or end2 <= start1
        assert t1 == t2 or apart, "two threads ran Warp calls at the same time"

"""bench.device_loop (scripts/bench_device_loop.py): every mode runs the loop's steps it says,
on the lane it names, and the ratios are each mode's iteration over env step + learner."""

from __future__ import annotations

import pytest

from lab.bench import device_loop
from tests.fakes.fake_device_env import FakeDeviceEnv
from tests.fakes.runs import tiny_config


def _fake(task, backend, num_envs, seed):
    return FakeDeviceEnv(num_envs, seed)


def test_every_mode_runs_its_steps_and_the_ratios_follow() -> None:
    result = device_loop.run(
        tiny_config(num_envs=16), device_loop.MODES, iterations=4, rounds=2, env_factory=_fake
    )
    modes = result["modes"]
    assert result["rounds"] == 2 and set(modes) == set(device_loop.MODES)
    assert all(m["n"] == 8 for m in modes.values())
    assert modes["env_only"]["learner_ms_median"] is None  # no update ran
    assert modes["learner_only"]["env_step_ms_median"] is None  # no env step ran
    for mode in ("serial", "stream"):
        assert modes[mode]["env_step_ms_median"] > 0 and modes[mode]["learner_ms_median"] > 0
    assert modes["serial"]["lane"] == "serial" and modes["stream"]["lane"] == "thread"
    total = modes["serial"]["env_step_ms_median"] + modes["serial"]["learner_ms_median"]
    assert result["ratios"]["env_step_plus_learner_ms"] == pytest.approx(total, abs=1e-3)
    assert result["ratios"]["serial"] == pytest.approx(
        modes["serial"]["iter_ms_median"] / total, abs=2e-3
    )
    assert "| stream | thread | 8 |" in device_loop.table(result)


def test_an_unknown_mode_and_a_host_env_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown modes"):
        device_loop.run(tiny_config(), ("fast",), 1, 1, env_factory=_fake)
    with pytest.raises(ValueError, match="not a device env"):
        device_loop.run(tiny_config(), ("serial",), 1, 1)

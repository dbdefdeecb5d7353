"""What a task offers is asked of its record (envs.tasks.task_of), never decided by the type of
its config: the records' values for both tasks, the registry covering every task schema, and
no module outside envs/ narrowing a task config by type."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from flashsac_bench.config.backend import MujocoConfig
from flashsac_bench.config.task import TASKS as TASK_NAMES
from flashsac_bench.config.task import BaseTaskConfig, GymnasiumTaskConfig, TaskConfig
from flashsac_bench.envs.contract.task import Task
from flashsac_bench.envs.tasks import TASKS, task_of

ROOT = Path(__file__).resolve().parents[2]
TASK_TYPES = {"BaseTaskConfig", "TaskConfig", "GymnasiumTaskConfig"}


def _type_checks(source: str) -> list[int]:
    """Lines of `source` with isinstance(x, <a task config class>) (also in a tuple or union)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
        ):
            continue
        names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
        if names & TASK_TYPES:
            found.append(node.lineno)
    return found


def test_the_detector_finds_a_task_type_check():
    assert _type_checks("if isinstance(cfg.task, TaskConfig):\n    pass\n") == [1]
    assert _type_checks("ok = isinstance(t, int | config.task.GymnasiumTaskConfig)") == [1]
    assert _type_checks("isinstance(env, VecEnv)") == []


def test_no_module_outside_envs_decides_by_the_task_configs_type():
    found = []
    for folder in ("flashsac_bench", "lab", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.is_relative_to(ROOT / "flashsac_bench" / "envs"):
                continue  # each task's folder narrows its own schema (g1_config, ...)
            found += [f"{path.relative_to(ROOT)}:{n}" for n in _type_checks(path.read_text())]
    assert found == [], "ask envs.tasks.task_of(task) what the task offers"


def test_every_task_schema_has_a_record():
    assert sorted(TASKS) == sorted(TASK_NAMES)
    for name, task in TASKS.items():
        assert task.name == name
        assert task_of(BaseTaskConfig.schema_for(name)()) is task


def test_what_the_g1_walk_offers():
    task = TaskConfig()
    offer = task_of(task)
    assert (offer.walks, offer.robustness, offer.estimates_cpu_runtime) == (True, True, True)
    assert (offer.renders, offer.stores_model, offer.probe) == ("states", True, None)
    assert offer.run_fields(task) == {}
    assert task.walk_tracking_top() == task.rewards.tracking_lin_vel * task.ctrl_dt


def test_what_a_gymnasium_task_offers():
    task = GymnasiumTaskConfig(env_id="Humanoid-v5")
    offer = task_of(task)
    assert (offer.walks, offer.robustness, offer.estimates_cpu_runtime) == (False, False, False)
    assert (offer.renders, offer.stores_model) == ("episode", False)
    assert offer.probe is not None  # its env is known only by making one
    assert offer.run_fields(task) == {"env_id": "Humanoid-v5"}
    assert task.walk_tracking_top() is None
    record = {"gymnasium": "1.4.0", "dt": 0.015, "action_low": [-1.0], "action_high": [1.0]}
    fields = offer.export_fields(task, record)
    assert fields["env_id"] == "Humanoid-v5" and fields["action_high"] == [1.0]


def test_a_task_refuses_a_backend_it_does_not_run_on():
    with pytest.raises(ValueError, match="no env for task 'g1_walk_flat' on no backend"):
        task_of(TaskConfig()).make_env(TaskConfig(), None, 1, 0)
    gym = GymnasiumTaskConfig()
    with pytest.raises(ValueError, match="no env for task 'gymnasium' on backend 'mujoco'"):
        task_of(gym).make_env(gym, MujocoConfig(), 1, 0)


def test_an_unknown_render_mode_is_refused():
    with pytest.raises(ValueError, match="Task.renders"):
        Task(
            name="t",
            walks=False,
            robustness=False,
            estimates_cpu_runtime=False,
            renders="video",
            stores_model=False,
            make_env=lambda *a: None,  # type: ignore[arg-type,return-value]
            record=dict,  # type: ignore[arg-type]
            run_fields=dict,  # type: ignore[arg-type]
            export_fields=lambda t, r: {},
        )


def test_the_registry_loads_no_physics_or_gymnasium():
    code = (
        "import sys, flashsac_bench.envs, flashsac_bench.envs.tasks; "
        "print(sorted(m for m in ('mujoco', 'warp', 'mujoco_warp', 'gymnasium', 'torch') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"

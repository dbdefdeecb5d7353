"""backend=mjwarp's options and its failures: each a ConfigError of one line, raised before any
env, learner or run dir exists; without the [mjwarp] extra, one line naming the pip command."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from hydra.errors import ConfigCompositionException

from flashsac_bench.config import ConfigError, register_configs, to_config
from flashsac_bench.config.backend import MjwarpConfig, MujocoConfig, WarpOptions
from tests.fakes.runs import REPO

register_configs()


def _config(*overrides: str):
    with initialize_config_module("flashsac_bench.conf", version_base="1.3"):
        return to_config(compose("config", overrides=list(overrides)))


def test_the_preset_composes_with_its_own_options() -> None:
    c = _config("backend=mjwarp", "hardware=cpu", "+experiment=smoke")
    assert c.backend.name == "mjwarp"
    # "auto" follows the learner: Warp's CPU device here, also on a machine with a GPU
    assert c.backend == MjwarpConfig(warp=WarpOptions(device="cpu", nconmax=48, njmax=384))
    assert _config().backend == MujocoConfig()  # the default config carries no Warp option


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["backend=mjwarp", "backend.warp.nconmax=0"], "backend.warp.nconmax=0: must be in [1, "),
        (["backend=mjwarp", "backend.warp.device=gpu"], "backend.warp.device must be"),
        (["backend=mjwarp", "+backend.warp.nconmx=3"], "unknown key backend.warp.nconmx"),
        (["backend=mjwarp", "backend.warp.device=cuda"], "must run on the learner's device"),
        (["backend.name=bullet"], "backend.name must be one of ('mujoco', 'mjwarp')"),
        (
            ["backend.name=mjwarp"],
            "backend=mujoco's options: choose the backend with backend=mjwarp",
        ),
    ],
)
def test_a_bad_option_is_one_line(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _config(*overrides, "hardware=cpu")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_the_g1_walk_warp_preset_is_g1_walk_h200s_learner_at_u16_on_2048_gpu_worlds() -> None:
    warp, base = _config("+experiment=g1_walk_warp"), _config("+experiment=g1_walk_h200")
    assert warp.backend.name == "mjwarp" and warp.backend.warp_options().device == "cuda:0"
    assert (warp.run.num_envs, warp.replay.batch_size) == (2048, 2048)
    assert (warp.path.name, warp.update.name, warp.hardware.name) == ("cudagraph", "u16", "h200")
    assert (warp.replay.learning_starts, warp.replay.replay_buffer_n) == (12, 256)
    assert warp.learner == base.learner and warp.task == base.task


@pytest.mark.parametrize(
    ("overrides", "error", "message"),
    [
        (["backend.warp.overlap=false"], ConfigCompositionException, "backend.warp.overlap"),
        (["backend=mjwarp", "backend.workers=2"], ConfigCompositionException, "backend.workers"),
        (["backend=mjwarp", "+backend.mode=threads"], ConfigError,
         "backend.mode (an option of backend=mujoco, not of backend=mjwarp)"),
    ],
)  # fmt: skip
def test_each_backend_takes_only_its_own_options(overrides, error, message) -> None:
    with pytest.raises(error, match=re.escape(message)):
        _config(*overrides)
    # a stored config (plain data) that mixes them: one line naming whose option it is
    with pytest.raises(ConfigError, match=r"backend.warp \(an option of backend=mjwarp, not of"):
        to_config({"backend": {"name": "mujoco", "warp": {"overlap": False}}})
    with pytest.raises(ConfigError, match=r"backend.workers \(an option of backend=mujoco, not"):
        to_config({"backend": {"name": "mjwarp", "workers": 2}})


def test_without_the_extra_the_check_and_the_import_name_the_pip_command(monkeypatch) -> None:
    # Both imports fail as if not installed (also where the extra is absent for real).
    monkeypatch.setitem(sys.modules, "mujoco_warp", None)
    monkeypatch.setitem(sys.modules, "warp", None)
    with pytest.raises(ConfigError) as err:
        MjwarpConfig().check_available()
    assert str(err.value) == (
        "backend=mjwarp needs the [mjwarp] extra (warp, mujoco_warp not installed): "
        'pip install -e ".[mjwarp]"'
    )
    MujocoConfig().check_available()  # the CPU backend needs nothing more
    from flashsac_bench.envs.g1.warp.physics import MissingExtraError, import_warp

    with pytest.raises(MissingExtraError, match=r'pip install -e "\.\[mjwarp\]"'):
        import_warp()


def test_the_cli_refuses_a_missing_extra_in_one_line_and_writes_nothing(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    code = (
        "import sys; sys.modules['warp'] = None; sys.modules['mujoco_warp'] = None; "
        "from flashsac_bench.__main__ import main; main()"
    )
    argv = ["backend=mjwarp", "hardware=cpu", "+experiment=smoke", f"hydra.run.dir={run_dir}"]
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    lines = [ln for ln in (out.stdout + out.stderr).splitlines() if ln.strip()]
    assert out.returncode != 0
    assert len(lines) == 1 and 'pip install -e ".[mjwarp]"' in lines[0], lines
    assert not run_dir.exists()

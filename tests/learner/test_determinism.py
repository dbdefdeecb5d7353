"""bench.determinism: state fingerprints repeat on the CPU, and every level of the check (replay
in one learner, a second learner, another process) reports a difference when there is one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import torch

from flashsac_bench.bench import determinism
from flashsac_bench.bench.synthetic import Setup, build_learner
from flashsac_bench.learner.learner import FlashSACLearner

ROOT = Path(__file__).resolve().parents[2]
SETUP = Setup(batch_size=32, updates_per_step=2, num_envs=16, tiny=True)


def test_digest_follows_every_bit_of_the_state():
    learner = build_learner(SETUP, "eager")
    snap = learner.state.snapshot()
    d0 = determinism.state_digest(learner)
    with torch.no_grad():
        p = learner.state.critic_params
        p.view(-1)[7] = torch.nextafter(p.view(-1)[7], torch.tensor(float("inf")))
    assert determinism.state_digest(learner) != d0
    learner.state.restore(snap)
    assert determinism.state_digest(learner) == d0


def test_eager_cycles_repeat_on_the_cpu_and_move_the_state():
    run = determinism.fingerprints(SETUP, "eager", cycles=2)
    assert determinism.verdicts(run) == {"replayed": None, "second_learner": None}
    assert len(set(run["first"])) == 3  # initial, after cycle 1, after cycle 2: all different


def test_a_nondeterministic_cycle_is_reported(monkeypatch):
    real = FlashSACLearner.update

    def noisy(self):  # stands in for a kernel whose reduction order changes from call to call
        real(self)
        with torch.no_grad():
            self.state.critic_params.add_(torch.rand(()) * 1e-6)

    monkeypatch.setattr(FlashSACLearner, "update", noisy)
    run = determinism.fingerprints(SETUP, "eager", cycles=2)
    v = determinism.verdicts(run)
    assert v == {"replayed": 1, "second_learner": 1}
    # ... and named: the noise is in the critic's weights only after the cycle that added it
    assert determinism.where(run, v) == {
        "replayed": ["critic.params"],
        "second_learner": ["critic.params"],
    }


def _cli(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        str(ROOT / "scripts/validate_determinism.py"),
        "--tiny",
        "--batch-size=32",
        "--num-envs=16",
        "--cycles=2",
        *extra,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_another_process_is_compared_through_the_written_fingerprints(tmp_path):
    out = tmp_path / "a.json"
    first = _cli(tmp_path, f"--output={out}")
    assert first.returncode == 0 and "DETERMINISTIC" in first.stdout
    same = _cli(tmp_path, f"--compare={out}")
    assert same.returncode == 0, same.stdout + same.stderr
    report = json.loads(out.read_text())
    report["runs"][0]["first"][2] = "0" * 64  # as if the other process's cycle 2 differed
    out.write_text(json.dumps(report))
    differs = _cli(tmp_path, f"--compare={out}")
    assert differs.returncode == 1 and "NOT DETERMINISTIC" in differs.stdout
    rows = [line.split() for line in differs.stdout.splitlines()]
    assert ["eager", "-", "-", "2"] in rows
    assert "other_process differs in: " not in differs.stdout  # its per-tensor digests agree
    report["runs"][0]["tensors"]["first"][2]["actor.params"] = "0" * 64
    out.write_text(json.dumps(report))
    named = _cli(tmp_path, f"--compare={out}")
    assert "other_process differs in: actor.params" in named.stdout
    other_setup = _cli(tmp_path, f"--compare={out}", "--cycles=1")
    assert other_setup.returncode == 2 and "with 2 cycles; this is" in other_setup.stderr


def test_path_options_may_carry_inductor_options():
    """`--path-options 'inductor_options={"deterministic":true}'` (the GPU check's second try)
    reaches the learner's PathConfig, merged with the explicit inductor options."""
    from dataclasses import replace

    setup = replace(SETUP, path_options=(("inductor_options", {"deterministic": True}),))
    learner = build_learner(setup, "eager", inductor_options={"combo_kernels": False})
    assert learner.path_cfg.inductor_options == {"deterministic": True, "combo_kernels": False}

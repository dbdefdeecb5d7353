"""Replay stability of the cudagraph path (scripts/validate_replay_stability.py).

Replays the captured cycle N times, inserting fresh rows and updating reward statistics between
replays as the runner does, and copying each replay's metrics into its own pinned host slot
(asynchronously, as the runner does). Checks: allocated / reserved device memory identical after
capture and at the end; Adam and schedule steps exact; every slot finite; slot k holds replay k's
metrics (its learning rates are the schedule's values at replay k, and spot-checked slots equal
a synchronous read taken right after that replay).
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import torch

from flashsac_bench.learner.paths import CapturedPath
from flashsac_bench.learner.state import METRIC_INDEX
from lab.bench.synthetic import Setup, build_learner


def replay_stability(setup: Setup, replays: int, spot_every: int = 97) -> dict:
    learner = build_learner(setup, "cudagraph")
    learner.warmup()
    path = learner.path
    if not isinstance(path, CapturedPath) or path.graph is None:
        return {"ok": False, "checks": [{"check": "graph captured", "ok": False}]}
    dev = learner.device
    torch.cuda.synchronize(dev)
    alloc0, reserved0 = torch.cuda.memory_allocated(dev), torch.cuda.memory_reserved(dev)
    slots = torch.empty(replays, len(learner.metric_names), pin_memory=True)
    g = torch.Generator(device=dev).manual_seed(7)
    width, n = learner.statics.rows.width, setup.num_envs
    spot: dict[int, list[float]] = {}
    start = time.perf_counter()
    for k in range(replays):
        rows = torch.randn(n, width, device=dev, generator=g)
        learner.ring.insert_rows(rows)
        learner.update_reward_stats(rows[:, 0], torch.zeros(n, device=dev))
        learner.update()
        slots[k].copy_(learner.metrics_tensor(), non_blocking=True)
        if k % spot_every == 0:
            spot[k] = learner.metrics_tensor().tolist()  # synchronous read of replay k
    del rows  # the loop's last temporary is not part of the learner's footprint
    torch.cuda.synchronize(dev)
    elapsed = time.perf_counter() - start
    alloc1, reserved1 = torch.cuda.memory_allocated(dev), torch.cuda.memory_reserved(dev)
    s = learner.state
    sched = learner.statics.critic_schedule
    lr_ok = True
    for k in range(replays):
        # Replay k's last critic update ran at scheduler step (k+1)*n_critic - 1.
        want_c = sched.lr_at((k + 1) * learner.n_critic - 1)
        want_a = learner.statics.actor_schedule.lr_at((k + 1) * learner.n_actor - 1)
        got_c, got_a = (
            slots[k, METRIC_INDEX["critic_lr"]].item(),
            slots[k, METRIC_INDEX["actor_lr"]].item(),
        )
        lr_ok &= math.isclose(got_c, want_c, rel_tol=1e-6) and math.isclose(
            got_a, want_a, rel_tol=1e-6
        )
    checks = [
        {"check": "allocated memory identical", "ok": alloc0 == alloc1, "values": [alloc0, alloc1]},
        {
            "check": "reserved memory identical",
            "ok": reserved0 == reserved1,
            "values": [reserved0, reserved1],
        },
        {
            "check": "critic/actor/temperature Adam steps exact",
            "ok": s.critic_adam.step.item() == replays * learner.n_critic
            and s.actor_adam.step.item() == replays * learner.n_actor
            and s.temp_adam.step.item() == replays * learner.n_actor,
            "values": [
                s.critic_adam.step.item(),
                s.actor_adam.step.item(),
                s.temp_adam.step.item(),
            ],
        },
        {
            "check": "schedules advanced exactly",
            "ok": s.critic_sched_step.item() == replays * learner.n_critic
            and s.actor_sched_step.item() == replays * learner.n_actor,
        },
        {"check": "every replay's metrics finite", "ok": bool(torch.isfinite(slots).all())},
        {"check": "slot k holds replay k's learning rates", "ok": bool(lr_ok)},
        {
            "check": "async slots equal synchronous reads",
            "ok": all(slots[k].tolist() == v for k, v in spot.items()),
        },
        {"check": "graph captured once", "ok": path.captures == 1},
    ]
    return {
        "setup": {k: v for k, v in setup.__dict__.items() if k != "dims"},
        "replays": replays,
        "replay_loop_s": elapsed,
        "memory": {"allocated": [alloc0, alloc1], "reserved": [reserved0, reserved1]},
        "final_metrics": learner.metrics_from(slots[-1]),
        "checks": checks,
        "ok": all(c["ok"] for c in checks),
    }


def validate(setup: Setup, replays: int, output: Path | None = None) -> int:
    """scripts/validate_replay_stability.py: run the replays, write the JSON report to `output`
    and print every check; 0 when all passed."""
    torch.set_float32_matmul_precision("high")
    report = replay_stability(setup, replays)
    report["argv"] = sys.argv
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(report, indent=2) + "\n")
    for c in report["checks"]:
        print(f"{'ok ' if c['ok'] else 'FAIL'} {c['check']} {c.get('values', '')}")
    print("REPLAY STABILITY", "OK" if report["ok"] else "FAILED")
    return 0 if report["ok"] else 1

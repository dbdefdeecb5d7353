"""Plan and resume: run.resume's checkpoint, loaded and checked before the run dir is written,
and restored into the run once its parts are built. Which checkpoint a resume continues and
what it may change: runner.resume."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from flashsac_bench.envs.contract.api import DeviceVecEnv, VecEnv
from flashsac_bench.learner.learner import FlashSACLearner
from flashsac_bench.runner.checkpoint import is_learner_only
from flashsac_bench.runner.collector import Staging
from flashsac_bench.runner.device_collector import DeviceStaging
from flashsac_bench.runner.env_factory import env_factory_is_default
from flashsac_bench.runner.records import Records
from flashsac_bench.runner.resume import ResumePlan, plan_resume
from flashsac_bench.runner.summary import load_summary

if TYPE_CHECKING:
    from flashsac_bench.runner.env_factory import EnvFactory

log = logging.getLogger("flashsac_bench.runner")


def make_plan(records: Records, env_factory: EnvFactory | None) -> ResumePlan:
    """run.resume's plan, its checkpoint loaded and checked (ResumeError before any work);
    `skip`: run.resume=auto found this run complete. Reads only."""
    t = time.perf_counter()
    if env_factory_is_default(env_factory):
        from flashsac_bench.envs import task_record  # the built-in env's task

        records.info.model = task_record(records.cfg.task)
    plan = plan_resume(
        records.cfg, records.run_dir, records.info.training_config, model=records.info.model
    )
    if plan.skip:
        for note in plan.notes:
            log.warning(note)
        return plan
    if plan.payload is not None:
        records.state.resumed_from = str(plan.path)
        records.info.startup["resume_load_s"] = time.perf_counter() - t
    return plan


def existing_summary(records: Records) -> dict[str, Any]:
    """A complete run's summary.json (as this run would write it, if it cannot be read)."""
    try:
        return load_summary(records.run_dir)
    except (OSError, ValueError):
        return records.summary()


def restore_checkpoint(
    ckpt: dict[str, Any],
    records: Records,
    learner: FlashSACLearner,
    env: VecEnv | DeviceVecEnv,
    staging: Staging | DeviceStaging,
    refill_rows: int,
) -> None:
    """Continue from the checkpoint `ckpt`: everything, or (learner-only) the learner alone."""
    state = records.state
    learner.load_state_dict(ckpt["learner"])
    state.start_iteration = state.done_iterations = int(ckpt["iteration"])
    if is_learner_only(ckpt):
        # No replay / env state (a checkpoint converted from unilab-rl, which saves none): the
        # envs start fresh episodes and the ring refills to learning_starts rows with the
        # loaded policy acting before updates continue -- as UniLab's own resume does.
        state.policy_refill = True
        log.warning(
            "resumed from the learner-only checkpoint %s at iteration %d: it holds no "
            "replay or env state, so the replay refills to %d rows (loaded policy acting) "
            "before updates continue",
            state.resumed_from,
            state.start_iteration,
            refill_rows,
        )
        return
    learner.ring.load_state_dict(ckpt["replay"])
    env.set_state(ckpt["env"])
    staging.load_state_dict(ckpt["staging"])
    records.load_state_dict(ckpt)
    log.info("resumed from %s at iteration %d", state.resumed_from, state.start_iteration)

from __future__ import annotations

import os
from dataclasses import dataclass

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.options import installed

LOGGERS = ("tensorboard", "wandb", "none")
INSTALL_WANDB = 'pip install -e ".[wandb]"'
# W&B modes that write no more than the run dir (no account, no network).
WANDB_LOCAL_MODES = ("offline", "disabled", "dryrun")


@dataclass
class LoggerConfig:
    """Where a run's scalars go (group `logger`). "tensorboard": event files in <run dir>/tb;
    "wandb": a Weights & Biases run ([wandb] extra) under the same scalar names, with the
    resolved config, named after the run dir (its project, entity and group: W&B's own
    WANDB_PROJECT, WANDB_ENTITY, WANDB_RUN_GROUP; WANDB_MODE=offline keeps it in the run dir);
    "none": summary.json only. One choice, so that a run has one logged record of its scalars
    and the default config one key for it."""

    name: str = "tensorboard"

    def __post_init__(self) -> None:
        if self.name not in LOGGERS:
            raise ConfigError(f"logger.name must be one of {', '.join(LOGGERS)}, got {self.name!r}")

    def check_available(self) -> None:
        """Refuse logger=wandb where it cannot log (one line: the install command, or how to
        log in). Not part of __post_init__: a config must still compose and validate without
        the extra (tests, --cfg job)."""
        if self.name != "wandb":
            return
        if not installed("wandb"):
            raise ConfigError(
                f"logger=wandb needs the [wandb] extra (wandb not installed): {INSTALL_WANDB}"
            )
        if os.environ.get("WANDB_MODE", "online") in WANDB_LOCAL_MODES:
            return
        import wandb

        try:
            logged_in = wandb.login(verify=False, prompt=False)  # no prompt, no network
        except Exception as err:  # noqa: BLE001 - W&B's own errors (a malformed key)
            raise ConfigError(f"logger=wandb: {' '.join(str(err).split())}") from None
        if not logged_in:
            raise ConfigError(
                "logger=wandb: no W&B API key (wandb login, or WANDB_API_KEY); "
                "WANDB_MODE=offline logs into the run dir without one"
            )

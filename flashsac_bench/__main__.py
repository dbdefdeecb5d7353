"""`python -m flashsac_bench [--debug] [-m] [+experiment=...] [group=option ...] [key=value ...]`
and the `flashsac-bench` script: training runs and sweeps (flashsac_bench.cli.train).

The Hydra task is declared here because Hydra names a job after the module of its task
function: the job's name (`hydra.job.name`, a run dir's `__main__.log`, a SLURM job's name) is
that of this entry point, whichever module does the work.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from flashsac_bench.cli import train


@hydra.main(version_base="1.3", config_path=train.CONFIG_PATH, config_name=train.CONFIG_NAME)
def _hydra_main(cfg: DictConfig) -> float | None:
    return train.run_job(cfg)


def main() -> None:
    train.main(_hydra_main)


if __name__ == "__main__":
    main()

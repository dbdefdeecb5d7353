"""`python -m flashsac_bench [+experiment=...] [group=option ...] [key=value ...]`."""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from flashsac_bench.config import ConfigError, register_configs, to_config

register_configs()


@hydra.main(version_base="1.3", config_path="pkg://flashsac_bench.conf", config_name="config")
def _hydra_main(cfg: DictConfig) -> float | None:
    try:
        config = to_config(cfg)
    except ConfigError as err:
        # One clear line, no traceback: the config is wrong, not the program.
        print(f"flashsac_bench: invalid configuration: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    from flashsac_bench.runner import train

    return train(config, cfg)


def main() -> None:
    _hydra_main()


if __name__ == "__main__":
    main()

"""Structured (typed) Hydra configs. Each group's dataclass mirrors one code seam."""

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.root import Config, to_config
from flashsac_bench.config.store import register_configs

__all__ = ["Config", "ConfigError", "register_configs", "to_config"]

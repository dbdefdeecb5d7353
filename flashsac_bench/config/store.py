from __future__ import annotations

from hydra.core.config_store import ConfigStore

from flashsac_bench.config.root import Config

SCHEMA_NAME = "flashsac_bench_schema"


def register_configs() -> None:
    """Register the typed schema that conf/config.yaml starts its defaults list with.

    Every YAML in conf/ merges onto this schema, so a wrong type or an unknown key fails at
    composition time, before the task function runs.
    """
    ConfigStore.instance().store(name=SCHEMA_NAME, node=Config)

from __future__ import annotations

from hydra.core.config_store import ConfigStore

from flashsac_bench.config.keys import OPTION_GROUPS
from flashsac_bench.config.root import Config

SCHEMA_NAME = "flashsac_bench_schema"


def option_schema_name(group: str, option: str) -> str:
    """The ConfigStore name of option `option`'s schema in `group` (conf/<group>/<option>.yaml's
    defaults list starts from it)."""
    return f"flashsac_bench_{group}_{option}"


def register_configs() -> None:
    """Register the typed schema that conf/config.yaml starts its defaults list with, and each
    option's own schema (every backend's, every task's) that its YAML starts from.

    Every YAML in conf/ merges onto these schemas, so a wrong type or an unknown key (also a
    key of another backend or task) fails at composition time, before the task function runs.
    """
    store = ConfigStore.instance()
    store.store(name=SCHEMA_NAME, node=Config)
    for base in OPTION_GROUPS:
        for option in base.OPTIONS:
            store.store(name=option_schema_name(base.GROUP, option), node=base.schema_for(option))

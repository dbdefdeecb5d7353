from __future__ import annotations

from hydra.core.config_store import ConfigStore

from flashsac_bench.config.backend import BACKENDS, BackendConfig
from flashsac_bench.config.root import Config

SCHEMA_NAME = "flashsac_bench_schema"


def backend_schema_name(backend: str) -> str:
    """The ConfigStore name of backend `backend`'s schema (conf/backend/<backend>.yaml's
    defaults list starts from it)."""
    return f"flashsac_bench_backend_{backend}"


def register_configs() -> None:
    """Register the typed schema that conf/config.yaml starts its defaults list with, and each
    backend's own schema that its option in conf/backend/ starts from.

    Every YAML in conf/ merges onto these schemas, so a wrong type or an unknown key (also a
    key of another backend) fails at composition time, before the task function runs.
    """
    store = ConfigStore.instance()
    store.store(name=SCHEMA_NAME, node=Config)
    for backend in BACKENDS:
        store.store(name=backend_schema_name(backend), node=BackendConfig.schema_for(backend))

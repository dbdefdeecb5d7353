"""A config group whose options each have a schema of their own (backend, task).

The group's field in the root Config is typed by the group's base (`OptionGroup` subclass, one
field: `name`); each option's YAML in conf/<group>/ starts from its own schema (a subclass,
registered by config.store), so that a composed config holds the keys its option reads and no
others. A bare base (Config() built in code) becomes its option's defaults.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, ClassVar

from flashsac_bench.config.errors import ConfigError


class OptionGroup:
    """Mixin of a group base: `GROUP` (the config group), `OPTIONS` (its option names, the
    first the default) and `_schemas()` (name -> schema class)."""

    GROUP: ClassVar[str]
    OPTIONS: ClassVar[tuple[str, ...]]
    name: str

    @classmethod
    def _schemas(cls) -> dict[str, type[Any]]:
        raise NotImplementedError

    @classmethod
    def check_name(cls, name: object) -> None:
        if name not in cls.OPTIONS:
            raise ConfigError(f"{cls.GROUP}.name must be one of {cls.OPTIONS}, got {name!r}")

    @classmethod
    def schema_for(cls, name: str) -> type[Any]:
        """The schema of option `name` (ConfigError naming the options for another name)."""
        cls.check_name(name)
        return cls._schemas()[name]

    @classmethod
    def chosen(cls, node: Any) -> type[Any]:
        """The schema of the option that `node` (a composed or stored group node) holds: the one
        Hydra composed it with (conf/<group>/<name>.yaml starts from it), else, for plain data
        (a stored config), the one its name chooses."""
        from omegaconf import DictConfig, OmegaConf

        # The group's base (also where an option's schema asks: it declares GROUP).
        base = next(c for c in cls.__mro__ if "GROUP" in vars(c))
        typed = OmegaConf.get_type(node) if isinstance(node, DictConfig) else None
        if isinstance(typed, type) and issubclass(typed, base) and typed is not base:
            return typed
        name = node.get("name", cls.OPTIONS[0]) if isinstance(node, dict | DictConfig) else None
        return cls.schema_for(str(name))

    @classmethod
    def owning(cls, key: str) -> str | None:
        """The option whose schema has the dotted key `key` (backend.warp.overlap: mjwarp),
        else None: what an unknown key's error names when it belongs to another option."""
        parts = key.split(".")
        if len(parts) < 2 or parts[0] != cls.GROUP or parts[1] == "name":
            return None
        for name in cls.OPTIONS:
            if parts[1] in {f.name for f in fields(cls.schema_for(name))}:
                return name
        return None

    def _require_name(self, name: str) -> None:
        if self.name != name:
            raise ConfigError(
                f"{self.GROUP}.name={self.name} in {self.GROUP}={name}'s options: choose the "
                f"{self.GROUP} with {self.GROUP}={self.name}"
            )


def installed(module: str) -> bool:
    """Whether `module` can be imported (found on the path; not blocked in sys.modules): an
    option's check_available, without importing it."""
    import importlib.util
    import sys

    if module in sys.modules:
        return sys.modules[module] is not None
    return importlib.util.find_spec(module) is not None

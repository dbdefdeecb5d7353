"""Key-level checks of a composed config against the typed schema, and dotted-key flattening.

Hydra's `+key=value` adds a key even to a typed (structured) node, and OmegaConf's conversion to
the dataclasses then drops it silently: `+run.iteratons=5` would run with the default
iterations and carry the typo into summary.json. `unknown_keys` finds such keys so that
`to_config` can refuse them like any other invalid configuration.
"""

from __future__ import annotations

import difflib
from dataclasses import fields, is_dataclass
from typing import Any

from flashsac_bench.config.backend import BackendConfig
from flashsac_bench.config.options import OptionGroup
from flashsac_bench.config.stored import removed_key_hint
from flashsac_bench.config.task import BaseTaskConfig

# The groups whose options have schemas of their own (config.options).
OPTION_GROUPS: tuple[type[OptionGroup], ...] = (BackendConfig, BaseTaskConfig)


def _items(node: Any) -> list[tuple[str, Any]]:
    from omegaconf import DictConfig

    if isinstance(node, DictConfig):
        return [(str(k), node._get_node(k)) for k in node.keys()]  # no interpolation resolving
    if isinstance(node, dict):
        return [(str(k), v) for k, v in node.items()]
    return []


def _is_mapping(node: Any) -> bool:
    from omegaconf import DictConfig

    return isinstance(node, dict | DictConfig)


def unknown_keys(node: Any, schema: Any, prefix: str = "") -> list[str]:
    """Dotted keys of `node` (a dict / DictConfig) that `schema` (a dataclass instance, e.g.
    the default Config()) does not have. Free-dict fields (path.inductor_options) take any key."""
    names = {f.name for f in fields(schema)}
    found: list[str] = []
    for key, value in _items(node):
        if not prefix and key == "hydra":
            continue  # Hydra's own node, when a caller left it in
        if key not in names:
            found.append(prefix + key)
            continue
        sub = getattr(schema, key)
        if is_dataclass(sub) and _is_mapping(value):
            found.extend(unknown_keys(value, _chosen_schema(sub, value), f"{prefix}{key}."))
    return found


def _chosen_schema(sub: Any, value: Any) -> Any:
    """The schema `value` is checked against: for a group whose options have schemas of their
    own (backend: `chosen`), the defaults of the one `value` holds."""
    chosen = getattr(type(sub), "chosen", None)
    if chosen is None:
        return sub
    try:
        return chosen(value)()
    except ValueError:  # an unknown name: the group's own check names it
        return sub


def unknown_key_hint(key: str, close: str | None, chosen: str | None = None) -> str:
    """What follows an unknown key in its error: whose option it is when it belongs to another
    option of its group (backend, task) than `chosen` (the one composed), where it went or why
    it is gone (config.stored), else its closest sibling `close` when there is one."""
    group = key.split(".")[0]
    for base in OPTION_GROUPS:
        owner = base.owning(key) if base.GROUP == group else None
        if chosen is not None and owner not in (None, chosen):
            return f" (an option of {group}={owner}, not of {group}={chosen})"
    if hint := removed_key_hint(key):
        return f" ({hint})"
    return f" (did you mean {close}?)" if close else ""


def suggest(key: str, schema: Any) -> str | None:
    """The closest sibling of an unknown dotted key (for 'did you mean ...?')."""
    *parents, leaf = key.split(".")
    node = schema
    for part in parents:
        node = getattr(node, part, None)
        if not is_dataclass(node):
            return None
    match = difflib.get_close_matches(leaf, [f.name for f in fields(node)], n=1, cutoff=0.75)
    return ".".join([*parents, match[0]]) if match else None


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1}; lists and tuples are leaves (tuples become lists)."""
    out: dict[str, Any] = {}
    if isinstance(tree, dict):
        if not tree and prefix:
            out[prefix[:-1]] = {}
        for key, value in tree.items():
            out.update(flatten(value, f"{prefix}{key}."))
        return out
    if isinstance(tree, tuple):
        tree = list(tree)
    out[prefix[:-1]] = tree
    return out

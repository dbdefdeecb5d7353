"""Configs come from the config tree, and only the project's own classes are made from them.

Every command composes its config from one tree, `flashsac_bench.conf` (cli.hydra_flags refuses
the flags that would add another). Two more ways out of it are closed here, on every command
(`python -m flashsac_bench` / `flashsac-bench`, evaluate, export, convert):

- A group option names a config file of its group's folder. An option that leads out of it
  (`+experiment=../../x`, `learner=/x`, `hydra/launcher=../x`, also inside a sweep's list) would
  make Hydra compose any YAML on disk: `refuse_options_outside` refuses it before anything is
  composed, for --cfg / --help / --info too.
- What Hydra makes from a composed config -- its callbacks, launcher and sweeper (every
  `_target_`), and the handlers, formatters and filters of `hydra.job_logging` /
  `hydra.hydra_logging` (`class`, `()` and `ext://` values, which logging imports and calls) --
  is on the project's list (TARGETS, LOGGING_CLASSES, LOGGING_STREAMS): `refuse_instantiated`
  names any other, whether a config file or an override (`+hydra.callbacks.x._target_=...`)
  brought it. A value is compared as written, before any interpolation is resolved.
- Where Hydra writes and what it hands the job's processes: a logging handler's `filename` is
  the one of Hydra's own logging configs (inside the run dir; another would append to, or
  create, any file the user can write), `hydra.output_subdir` stays inside the run dir, and
  `hydra.job.env_set` is empty (the tree sets none; an entry such as `LD_PRELOAD` or
  `PYTHONSTARTUP` would load code into every process the job starts, compile workers too).
  A job's environment comes from the shell it starts in.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from flashsac_bench.cli.errors import UsageError
from flashsac_bench.cli.hydra_flags import WHY, parse_args

CONFIG_MODULE = "flashsac_bench.conf"

# Every class Hydra may instantiate for a command (`_target_`), and where the tree uses it.
TARGETS: dict[str, str] = {
    "flashsac_bench.analysis.sweep_callback.ComparisonCallback": "conf/config.yaml callbacks",
    "flashsac_bench.cli.slurm_states.SlurmStatesCallback": "conf/config.yaml callbacks",
    "hydra._internal.core_plugins.basic_launcher.BasicLauncher": "Hydra's default launcher",
    "hydra._internal.core_plugins.basic_sweeper.BasicSweeper": "Hydra's default sweeper",
    "hydra_plugins.flashsac_bench_slurm.slurm_launcher.SlurmLauncher": "hydra/launcher=slurm_*",
    "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher": (
        "hydra/launcher=submitit_slurm"
    ),
    "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher": (
        "hydra/launcher=submitit_local"
    ),
}
# The classes (`class`, `()`) and streams (`ext://`) the logging configs may name: those of
# Hydra's own job_logging / hydra_logging options.
LOGGING_CLASSES = frozenset(
    {"logging.StreamHandler", "logging.FileHandler", "logging.NullHandler", "logging.Formatter"}
)
LOGGING_STREAMS = frozenset({"ext://sys.stdout", "ext://sys.stderr"})
LOGGING_NODES = ("job_logging", "hydra_logging")
# The log file Hydra's own job_logging writes: the run dir's `<job name>.log`.
LOGGING_FILENAMES = frozenset({"${hydra.runtime.output_dir}/${hydra.job.name}.log"})


# ---------------------------------------------------------------------------- group options
def _leaves_its_folder(option: str) -> bool:
    path = PurePosixPath(option)
    return path.is_absolute() or ".." in path.parts or "\\" in option or "\0" in option


def _options(override: Any) -> list[str]:
    """The option names an override chooses (a choice sweep's every one; a glob chooses among
    the group's own options)."""
    from hydra.core.override_parser.types import ChoiceSweep

    value = override.value()
    if override.is_delete() or value is None:
        return []
    if override.is_sweep_override():
        return list(override.sweep_string_iterator()) if isinstance(value, ChoiceSweep) else []
    return [override.get_value_element_as_str()]


def refuse_options_outside(argv: list[str]) -> None:
    """UsageError (one line) for a group override of `argv` whose option leads out of its
    group's folder; the rest is left to Hydra (an override it cannot parse, it reports)."""
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    args = parse_args(argv)
    if args is None or not args.overrides:
        return
    try:
        parsed = OverridesParser.create().parse_overrides(list(args.overrides))
    except Exception:  # noqa: BLE001 - Hydra's own parse of the command says what is wrong
        return
    with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
        repository = GlobalHydra.instance().config_loader().repository  # type: ignore[attr-defined]
        for override in parsed:
            group = override.key_or_group
            if not repository.group_exists(group):
                continue
            outside = [o for o in _options(override) if _leaves_its_folder(o)]
            if outside:
                raise UsageError(
                    f"{override.input_line} refused: a {group} option names a config of "
                    f"{CONFIG_MODULE}'s {group}/ folder, and {outside[0]!r} leads out of it; "
                    f"{WHY}"
                )


# ---------------------------------------------------------------------------- instantiation
def _walk(node: Any, where: str) -> list[tuple[str, str, Any]]:
    """(dotted place, key, value) of every entry of nested mappings / lists."""
    out = []
    if isinstance(node, dict):
        for key, value in node.items():
            place = f"{where}.{key}" if where else str(key)
            out.append((place, str(key), value))
            out.extend(_walk(value, place))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out.extend(_walk(value, f"{where}[{i}]"))
    return out


def _not_listed(place: str, key: str, value: Any, logging: bool) -> str | None:
    """What is wrong with one entry of a composed config (None: nothing)."""
    if key == "_target_" and value not in TARGETS:
        return f"{place}={value!r} is not a class this project instantiates"
    if not logging:
        return None
    if key in ("class", "()") and value not in LOGGING_CLASSES:
        return f"{place}={value!r} is not a logging class of Hydra's logging configs"
    if isinstance(value, str) and value.startswith("ext://") and value not in LOGGING_STREAMS:
        return f"{place}={value!r} is not a stream of Hydra's logging configs"
    return None


def _hydra_writes_or_sets(hydra: Any) -> str | None:
    """What is wrong with where Hydra writes (`output_subdir`) or what it puts into the job's
    environment (`job.env_set`), None: nothing."""
    if not isinstance(hydra, dict):
        return None
    subdir = hydra.get("output_subdir")
    if isinstance(subdir, str) and _leaves_its_folder(subdir):
        return f"hydra.output_subdir={subdir!r} leads out of the run dir"
    env_set = (hydra.get("job") or {}).get("env_set") or {}
    if env_set:
        name = next(iter(env_set))
        return (
            f"hydra.job.env_set.{name} would be set in the job's environment (set it in the "
            "shell that starts the command instead)"
        )
    return None


def refuse_instantiated(cfg: Any) -> None:
    """UsageError naming the first `_target_` (anywhere in the composed config, `hydra` node
    included) or logging class, stream or file that is not on the project's list, or a
    `hydra.output_subdir` / `hydra.job.env_set` that leaves the run dir / sets the job's
    environment."""
    from omegaconf import OmegaConf

    tree = OmegaConf.to_container(cfg, resolve=False)
    problem = _hydra_writes_or_sets(tree.get("hydra") if isinstance(tree, dict) else None)
    if problem:
        raise UsageError(f"{problem}: refused; {WHY}")
    for place, key, value in _walk(tree, ""):
        logging = place.startswith(tuple(f"hydra.{n}." for n in LOGGING_NODES))
        if logging and key == "filename" and value not in LOGGING_FILENAMES:
            raise UsageError(
                f"{place}={value!r} refused: a log file is the run dir's own, as Hydra's "
                f"logging configs write it; {WHY}"
            )
        problem = _not_listed(place, key, value, logging)
        if problem:
            raise UsageError(
                f"{problem} refused: Hydra would import and run it; what a config "
                f"instantiates comes from the project's list (cli.config_tree); {WHY}"
            )

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flashsac_bench.config.errors import ConfigError
from flashsac_bench.config.keys import flatten
from flashsac_bench.config.values import FREE, require_bounded

PATHS = ("eager", "compile", "cudagraph")
# Options the path decides itself (learner.paths): Inductor's own CUDA graphs are on for the
# compile path on CUDA and must stay off inside the cudagraph path's capture (graphs cannot nest).
PATH_OWNED_INDUCTOR_OPTIONS = ("triton.cudagraphs",)


@dataclass
class PathConfig:
    """How the one update cycle is executed (group `path`); every path computes the same math.

    eager: the update functions as they are. compile: each update step as one torch.compile'd
    graph. cudagraph: the compiled steps, and the whole cycle captured once as one CUDA graph
    that every iteration replays (CUDA only); where the capture fails, the run warns once and
    goes on with the compiled steps uncaptured (summary.json's `executor` says so).
    learner/paths.py has the rules each follows.
    """

    name: str = "eager"
    # Extra torch._inductor options for the compiled steps, e.g. {max_autotune: true}; the
    # escape hatch for Inductor's own levers, applied over the path's defaults. Nested keys
    # (`+path.inductor_options.triton.max_tiles=2` on the command line) become dotted ones.
    # Inductor checks its own options' values (here: finite numbers only).
    inductor_options: dict[str, Any] = field(default_factory=dict, metadata=FREE)

    def __post_init__(self) -> None:
        require_bounded(self, "path.")
        if self.name not in PATHS:
            raise ConfigError(f"path.name must be one of {PATHS}, got {self.name!r}")
        self.inductor_options = flatten(dict(self.inductor_options))
        owned = sorted(set(self.inductor_options) & set(PATH_OWNED_INDUCTOR_OPTIONS))
        if owned:
            raise ConfigError(
                f"path.inductor_options cannot set {', '.join(owned)}: the path decides it "
                "(Inductor's CUDA graphs are on for path=compile on CUDA, and cannot nest inside "
                "path=cudagraph's capture)"
            )

"""Folders the environment names, which a command will write, checked before it starts.

torch creates its compiler cache folder (TORCHINDUCTOR_CACHE_DIR) when its compiler is first
imported, and every command gets there (a training run's first update, even on the eager path,
goes through torch.func; export traces; evaluate and convert build a learner): a folder that
cannot be created would end the command half-way with a traceback. So every command checks,
before anything else, that each folder of CACHE_VARS that the environment sets can be created
and written (cli.writable.probe_writable: it creates nothing; how much room a cache needs is the
compiler's business), and refuses in one line naming the variable. The run dir
(`hydra.run.dir`, also one given through `${oc.env:...}`) is checked with the job
(cli.preflight, cli.train.check_job).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from flashsac_bench.config.errors import ConfigError

# Environment variables that name a folder a command writes, and what goes there.
CACHE_VARS = {
    "TORCHINDUCTOR_CACHE_DIR": "torch's compiler caches, created when its compiler is imported",
    "TRITON_CACHE_DIR": "Triton's compiled kernels",
}


class EnvironmentPathError(ConfigError):
    label = "invalid environment variable"


def check_environment_paths(environ: Mapping[str, str] = os.environ) -> None:
    """EnvironmentPathError (one line, naming the variable) for a folder of CACHE_VARS that the
    environment sets and that cannot be created or written."""
    from flashsac_bench.cli.writable import probe_writable

    for var, what in CACHE_VARS.items():
        value = environ.get(var, "")
        if not value:  # unset, or empty: torch's default, or the working directory
            continue
        problem = probe_writable(Path(value).expanduser(), min_free=0)
        if problem:
            raise EnvironmentPathError(
                f"{var}={value} ({what}): {problem.replace('the run dir', 'the folder')}; set it "
                "to a folder this user can write, or unset it"
            )

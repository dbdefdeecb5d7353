"""No command-line flag makes a command read a file as code (cli.hydra_flags).

Every flag of the installed Hydra's parser is classified (a newer Hydra's new flag fails the
first test until it is), and a crafted pickle sent through every flag that takes a value, for
every command, runs nothing; the flags that would read it (or configs from elsewhere) are
refused in one line with exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from flashsac_bench.cli import hydra_flags
from flashsac_bench.cli.errors import UsageError
from tests.fakes.runs import with_repo_on_path


def test_every_flag_of_the_installed_hydra_is_classified():
    flags = hydra_flags.parser_flags()
    assert set(flags) == set(hydra_flags.FLAGS), (
        "Hydra's parser and cli.hydra_flags.FLAGS differ: classify "
        f"{sorted(set(flags) - set(hydra_flags.FLAGS))}, drop "
        f"{sorted(set(hydra_flags.FLAGS) - set(flags))}"
    )
    refused = {d for d, why in hydra_flags.FLAGS.items() if why}
    assert {"experimental_rerun", "config_dir", "config_path", "config_name"} <= refused


def test_a_crafted_pickle_through_every_flag_runs_nothing(tmp_path):
    marker, results = tmp_path / "payload_ran", tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "tests.fakes.hydra_flag_driver", str(marker),
         str(tmp_path / "config.pickle"), str(results)],
        cwd=tmp_path, env=with_repo_on_path(dict(os.environ)), capture_output=True,
        text=True, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not marker.exists(), "a flag unpickled the crafted file"
    calls = json.loads(results.read_text())
    value_flags = {dest for _, dest, _ in calls}
    assert "experimental_rerun" in value_flags and "config_dir" in value_flags
    assert len(calls) == 4 * len(value_flags)
    for command, dest, code in calls:
        if hydra_flags.FLAGS[dest]:
            assert code == 2, (command, dest, code)
    refusals = [ln for ln in proc.stderr.splitlines() if " refused: it " in ln]
    assert len(refusals) == 4 * sum(1 for d in value_flags if hydra_flags.FLAGS[d])
    assert "Traceback" not in proc.stderr


def test_the_script_and_the_modules_share_the_checked_entry():
    (script,) = entry_points(group="console_scripts", name="flashsac-bench")
    assert script.value == "flashsac_bench.__main__:main"


@pytest.mark.parametrize(
    "argv",
    [
        ["--experimental-re", "x.pickle"],  # argparse takes unique prefixes, so Hydra does too
        ["--experimental-rerun=x.pickle"],
        ["-cd", "elsewhere"],
        ["--config-name", "evaluate"],
        ["-m", "hydra.searchpath=[file:///elsewhere]"],
        ["+hydra.searchpath=[file:///elsewhere]"],
    ],
)
def test_abbreviations_and_searchpath_overrides_are_refused(argv):
    with pytest.raises(UsageError, match=r"^\S+ refused: it "):
        hydra_flags.refuse(argv)


def test_the_flags_that_read_nothing_pass():
    for argv in (["--cfg", "job", "--resolve"], ["-m", "run.seed=1,2"], ["--help"], ["-i"]):
        hydra_flags.refuse(argv)

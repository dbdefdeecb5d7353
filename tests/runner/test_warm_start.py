"""A warm start (a second process, the same TORCHINDUCTOR_CACHE_DIR) loads the compiled updates
the first one saved instead of tracing them (learner.compile_store), says so in summary.json's
`compile`, and computes exactly what the cold start and plain torch.compile compute: the same
rows, the same final checkpoint, bit for bit."""

from __future__ import annotations

import pytest
import torch

from tests.fakes.runs import (
    cli_overrides,
    fake_env_environ,
    final_checkpoint_tensors,
    read_summary,
    run_cli,
    timing_free,
)


@pytest.mark.slow  # two cold compiles of the tiny learner (minutes on 2 cores)
def test_a_warm_start_skips_tracing_and_computes_the_cold_starts_bits(tmp_path):
    cache = tmp_path / "inductor"
    runs = {
        "cold": {},
        "warm": {},
        # torch's switch for its caches: nothing is saved or loaded, plain torch.compile
        "plain": {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"},
    }
    summaries = {}
    for name, extra in runs.items():
        env = fake_env_environ(TORCHINDUCTOR_CACHE_DIR=str(cache), **extra)
        args = [*cli_overrides(num_envs=8, iterations=12), "path=compile"]
        proc = run_cli(
            [*args, f"hydra.run.dir={tmp_path / name}"], env=env, cwd=tmp_path, timeout=900
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        summaries[name] = read_summary(tmp_path / name)
    cold, warm, plain = (summaries[k]["compile"] for k in runs)
    assert (cold["artifacts_compiled"], cold["artifacts_loaded"]) == (2, 0)
    assert cold["tracing_skipped"] is False and cold["dynamo_s"] > 0
    assert (warm["artifacts_compiled"], warm["artifacts_loaded"]) == (0, 2)
    assert warm["tracing_skipped"] is True and warm["artifacts_notes"] == []
    assert warm["frames_traced"] == 0 and warm["dynamo_s"] == 0 and warm["artifacts_load_s"] > 0
    assert plain["tracing_skipped"] is False and plain["frames_traced"] == 2
    assert all("caches are disabled" in note for note in plain["artifacts_notes"])
    # The same numbers: every learning row, every tensor of the final checkpoint.
    rows = {
        k: [timing_free(r) for r in s["rows_all"] if r["learning"]] for k, s in summaries.items()
    }
    assert rows["cold"] and rows["warm"] == rows["cold"] == rows["plain"]
    tensors = {k: final_checkpoint_tensors(tmp_path / k) for k in runs}
    for other in ("warm", "plain"):
        assert tensors[other].keys() == tensors["cold"].keys()
        differ = [
            k for k in tensors["cold"] if not torch.equal(tensors["cold"][k], tensors[other][k])
        ]
        assert differ == [], f"{other}: {differ[:5]}"

#!/usr/bin/env bash
# The dependency floors in pyproject.toml, checked: a fresh venv gets every dependency pinned to
# its floor (">=X" becomes "==X"), the package on top, then the user's commands run at those
# versions: the smoke run (a complete summary.json), a smoke sweep (its comparison table),
# evaluate (eval.json, eval.gif), export (TorchScript, and ONNX at the [onnx] floors) and
# pytest at its floor. A floor this script does not pass is not a floor.
#
#   bash scripts/check_floors.sh [WORK_DIR]          # default WORK_DIR: /tmp/flashsac_floors
#
# The code is the commit REF (default HEAD) of this checkout, the floors are those of this
# checkout's pyproject.toml (the same file unless pyproject.toml has uncommitted changes).
# torch is the one dependency not pinned to its floor here: it is installed first as TORCH_SPEC
# (default torch==2.13.0; a CPU-only machine wants TORCH_INDEX=https://download.pytorch.org/whl/cpu).
# Its floor is checked where that build is installed (docs/results.md, "Dependency floors").
# MUJOCO_BELOW=X also runs the smoke run at mujoco==X in the same venv, expecting it to fail.
set -euo pipefail
checkout=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/flashsac_floors}
torch_spec=${TORCH_SPEC:-torch==2.13.0}
rm -rf "$work"
mkdir -p "$work/src"
ref=$(git -C "$checkout" rev-parse --short "${REF:-HEAD}")
# A committed tree, not the working one: the check belongs to one commit.
git -C "$checkout" archive "$ref" | tar -x -C "$work/src"
repo=$work/src
python3 -m venv "$work/venv"
py="$work/venv/bin/python"
step() { printf '\n== %s\n' "$*"; }

# The floors: every ">=X" in [project] dependencies and the dev / onnx extras, torch excepted.
"$py" - "$checkout/pyproject.toml" >"$work/floors.txt" <<'EOF'
import re, sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
reqs = project["dependencies"] + [r for extra in ("dev", "onnx") for r in project["optional-dependencies"][extra]]
for req in reqs:
    name, floor = re.match(r"([A-Za-z0-9_.\-]+)\s*(?:\[[^\]]*\])?\s*>=\s*([^,;\s]+)", req).groups()
    if name != "torch":
        print(f"{name}=={floor}")
EOF
step "code at $ref, $(date -u +%F), python $("$py" -V | cut -d' ' -f2); the floors:"
cat "$work/floors.txt"

step "install: $torch_spec, then the package with its floors and extras"
"$py" -m pip install -q ${TORCH_INDEX:+--index-url "$TORCH_INDEX"} "$torch_spec"
"$py" -m pip install -q -c "$work/floors.txt" -e "$repo[dev]"
at_floors() {  # every pin of floors.txt whose name matches $1 is installed at its floor
  "$py" - "$work/floors.txt" "$1" <<'EOF'
import importlib.metadata as md, re, sys
from pip._vendor.packaging.version import Version
for pin in open(sys.argv[1]).read().split():
    if not re.fullmatch(sys.argv[2], pin.split("==")[0]):
        continue
    name, floor = pin.split("==")
    if Version(md.version(name)) != Version(floor):
        sys.exit(f"not installed at its floor: {pin} (got {md.version(name)})")
    print(pin, "installed")
EOF
}
at_floors '(?!onnx).*'
"$py" -c 'import torch; print("torch", torch.__version__)'

cd "$work"
run=$work/smoke
step "smoke run (20 iterations)"
"$py" -m flashsac_bench +experiment=smoke run.iterations=20 "hydra.run.dir=$run"
"$py" - "$run/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print("summary.json:", s["status"], "| rows_all:", len(s["rows_all"]), "| median iter_ms:",
      s["iter_ms"]["median"] if isinstance(s.get("iter_ms"), dict) else s.get("iter_ms"))
assert s["complete"] and len(s["rows_all"]) == 20, (s["status"], s["incomplete_reason"])
EOF

step "smoke sweep (update=u2,u8, 20 iterations): its comparison"
"$py" -m flashsac_bench -m +experiment=smoke update=u2,u8 run.iterations=20 \
  "hydra.sweep.dir=$work/sweep"
ls "$work/sweep" | grep -x -e comparison.csv -e comparison.md -e comparison.png | tee "$work/cmp.txt"
[ "$(wc -l <"$work/cmp.txt")" -eq 3 ] || { echo "the sweep comparison is incomplete"; exit 1; }

step "evaluate (2 episodes, rendered)"
"$py" -m flashsac_bench.evaluate "checkpoint=$run" episodes=2 num_envs=2 render_seconds=1
test -s "$run/eval.json" && test -s "$run/eval.gif"

step "export (TorchScript and ONNX), with the [onnx] extra at its floors"
"$py" -m pip install -q -c "$work/floors.txt" onnx onnxscript onnxruntime
at_floors 'onnx.*'
"$py" -m flashsac_bench.export "checkpoint=$run" onnx=true
"$py" - "$run/export" <<'EOF'
import json, sys
import numpy as np, onnxruntime, torch
out = sys.argv[1]
obs = torch.randn(17, json.load(open(f"{out}/policy.json"))["obs_dim"])
want = torch.jit.load(f"{out}/policy.torchscript.pt")(obs).detach().numpy()
(got,) = onnxruntime.InferenceSession(f"{out}/policy.onnx").run(None, {"obs": obs.numpy()})
err = float(np.abs(got - want).max())
print(f"onnxruntime vs TorchScript, 17 observations: max |difference| {err:.2e}")
assert err <= 1e-5
EOF

step "pytest at its floor (the walk-median helper's tests)"
"$py" -m pytest -q -p no:cacheprovider "$repo/tests/evaluation/test_walk_utd.py"

step "ruff at its floor: ruff check and ruff format --check"
(cd "$repo" && "$work/venv/bin/ruff" check . && "$work/venv/bin/ruff" format --check .)

step "everything that was installed"
"$py" -m pip freeze --exclude-editable

if [ -n "${MUJOCO_BELOW:-}" ]; then
  step "below the floor: mujoco==$MUJOCO_BELOW (expected to fail)"
  "$py" -m pip install -q "mujoco==$MUJOCO_BELOW"
  if "$py" -m flashsac_bench +experiment=smoke run.iterations=20 "hydra.run.dir=$work/below" \
    >"$work/below.log" 2>&1; then
    echo "mujoco==$MUJOCO_BELOW passed the smoke run: the floor could be lower"
  else
    echo "mujoco==$MUJOCO_BELOW fails the smoke run, as expected; its last lines:"
    tail -n 3 "$work/below.log"
  fi
fi
step "all floors passed"

#!/usr/bin/env bash
# Every GPU test (`pytest -m gpu`: the learner, runner, Warp and Gymnasium files), then the
# four-way sweep as a user runs it, in one device call (<= 10 min):
#   a. every GPU test in ONE process (a test's CUDA graphs must not break another's:
#      learner/graphs.py);
#   b. each GPU test file alone, in its own process, beside each other;
#   c. `python -m flashsac_bench -m +experiment=bench_h200 update=u2,u8
#      path=eager,compile,cudagraph` (Hydra's basic launcher: six jobs in one process),
#      SWEEP_ITERATIONS iterations each (default 200, the last 100 summarized); skipped with
#      SWEEP=0 or when the deadline is too near.
# STEPS picks steps (default "one alone sweep"): each needs most of one call on a cold cache, so
# `STEPS=one`, `STEPS=alone` and `STEPS=sweep` in back-to-back calls give each its time (a step
# runs until the deadline where no other follows). A step cut by its deadline gets SIGINT:
# pytest then still prints the failures it has seen.
# Each step has its deadline; what finished is kept: $OUT/gpu_tests_<steps>.tgz holds the full logs
# (summary.log, one_process.log, <file>.log, sweep.log) and the sweep's folder (comparison
# csv/md/png, multirun.yaml, each job's summary.json; no checkpoints), to unpack into
# docs/results/gpu_tests/<date>-<gpu>/.
#   FLASHSAC_BENCH_COMMIT=<commit> bash scripts/device/gpu_tests.sh [deadline_s]
# The Warp tests need warp-lang / mujoco-warp installed (scripts/device/README.md, "MuJoCo Warp
# on a lent machine") and the Gymnasium one the [gymnasium] wheels: without them they skip, and
# the summary's skip reasons say so.
source scripts/device/setup.sh
source scripts/device/lib.sh
DEADLINE=${1:-560}
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/ind}
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/tri}
STEPS=${STEPS:-one alone sweep}
TAG=${STEPS// /_}
R=/tmp/gpu_tests/$(date +%H%M%S)_$TAG  # two calls of different STEPS may run side by side
mkdir -p "$R"
exec > >(tee -a "$R/summary.log") 2>&1
echo "commit ${FLASHSAC_BENCH_COMMIT:-unknown}; $(nvidia-smi -L 2>/dev/null | head -n 1)"
PYTEST=(python3 -m pytest -q -p no:cacheprovider -rfEs --tb=long --durations=30 -m gpu)  # durations: what the one-process step must fit in one call
mapfile -t FILES < <("${PYTEST[@]}" --collect-only tests 2>/dev/null | grep "::" | cut -d: -f1 | sort -u)
echo "GPU test files: ${FILES[*]}"
step() { [[ " $STEPS " == *" $1 "* ]]; }
# a. one process (the order pytest collects: envs, learner, runner)
if step one; then
  share=$(left); step alone && share=$((share / 2))
  timeout -s INT -k 20 $share "${PYTEST[@]}" tests > "$R/one_process.log" 2>&1
  echo "== one process rc=$? (at ${SECONDS}s): $(tail -n 1 "$R/one_process.log")"
fi
# b. each file alone, side by side (separate processes and CUDA contexts)
pids=()
step alone || FILES=()
for f in "${FILES[@]}"; do
  name=$(basename "$f" .py)
  ( timeout -s INT -k 20 $(($(left) * 3 / 4)) "${PYTEST[@]}" "$f" > "$R/$name.log" 2>&1
    echo "== $name alone rc=$? (at ${SECONDS}s): $(tail -n 1 "$R/$name.log")" ) &
  pids+=($!)
done
[ ${#pids[@]} -eq 0 ] || wait "${pids[@]}"
# c. the four-way sweep, one process
if step sweep && [ "${SWEEP:-1}" != 0 ] && [ "$(left)" -gt 150 ]; then
  timeout -s INT -k 20 $(($(left) - 15)) python3 -m flashsac_bench -m +experiment=bench_h200 \
    update=u2,u8 path=eager,compile,cudagraph run.iterations="${SWEEP_ITERATIONS:-200}" \
    run.summary_last=$((${SWEEP_ITERATIONS:-200} / 2)) run.progress=plain \
    hydra.sweep.dir="$R/sweep" > "$R/sweep.log" 2>&1
  echo "== sweep rc=$? (at ${SECONDS}s): $(ls -d "$R"/sweep/*_u* 2>/dev/null | wc -l) job dirs"
  grep -h '"status"' "$R"/sweep/*_u*/summary.json 2>/dev/null | sort | uniq -c
else
  echo "== sweep skipped at ${SECONDS}s"
fi
echo; echo "== failures and errors"
grep -h -E "^(FAILED|ERROR) " "$R"/*.log | sort | uniq -c | head -n 40
tar czf "$OUT/gpu_tests_$TAG.tgz" -C "$R" --exclude=checkpoints --exclude=tb .
echo "== done at ${SECONDS}s"

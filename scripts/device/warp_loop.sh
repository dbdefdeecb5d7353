#!/usr/bin/env bash
# backend=mjwarp's loop on a lent GPU, after `warp_carry.sh install` (Warp in
# /tmp/site). One step per call, in this order; each starts nothing that cannot finish before
# its deadline and leaves its logs and results under $OUT (at most 4 files a step).
#   bash scripts/device/warp_loop.sh tests [deadline]     ~4-5 min on a cold Warp kernel cache
#       (MuJoCo Warp's CUDA kernels build on the first env; ~1 min warm): the Warp GPU tests and
#       the env lane's GPU test, the full log kept (warp_tests.log); then
#       diagnose/warp_det.py's modes (warp_det.log)
#   bash scripts/device/warp_loop.sh overlap [deadline]   ~2-3 min (a cold Inductor compile of
#       u16 / batch 2048 ~1 min, then 3 rounds x 6 modes x 200 iterations of ~10-30 ms): the
#       iteration at 2048 worlds, u16, batch 2048, cudagraph: env alone, learner alone, serial,
#       beside the update on a stream of its own, in one process (device_loop.json)
#   bash scripts/device/warp_loop.sh setup [deadline]     ~1.5 min: three 1-iteration runs of
#       the same setting (the first may compile, the second is warm, the third warm with the
#       Warp build on the main thread): setup_s, startup's parts, torch's compile facts
#   FROM=0 POINTS=6 SEEDS=1 LIMIT=75 bash scripts/device/warp_loop.sh sweep [deadline]
#       ~1.5 min a run (the run to the walking thresholds or LIMIT s, a cold compile where it is
#       the first run of its batch, then its final checkpoint): POINTS of the sweep's points
#       from number FROM in priority order (below), each seed, no evaluation; the table of
#       scripts/walk_utd.py (walk_utd.tgz holds every run's summary and log); EVAL=end
#       evaluates each point's policy in CPU MuJoCo too (a point's run then counts as a seed
#       of the preset it becomes)
#   SEEDS="1 2 3 4 5" LIMIT=60 bash scripts/device/warp_loop.sh walk [deadline]
#       ~1.2 min a seed, then the evaluations together (~1 min): +experiment=g1_walk_warp per
#       seed to the walking thresholds or LIMIT s, each policy evaluated in CPU MuJoCo (16
#       episodes of 1000 steps, render=false)
# Extra arguments after the deadline are Hydra overrides for overlap, setup, sweep and walk.
source scripts/device/setup.sh
source scripts/device/lib.sh
WHAT=${1:-tests}; DEADLINE=${2:-560}; shift 2 || shift $#
W=/tmp/warp_loop/$WHAT; mkdir -p $W/logs
exec > >(tee -a "$W/logs/warp_loop_$WHAT.log") 2>&1
export TORCHINDUCTOR_CACHE_DIR=/tmp/ind TRITON_CACHE_DIR=/tmp/tri  # shared by the calls
python3 -c "import warp, mujoco_warp; print('warp', warp.__version__)" || exit 2
# The setting of the issue's iteration target: 2048 worlds, the u16 learner on batch 2048.
AT_2048="+experiment=g1_walk_warp run.num_envs=2048 update.updates_per_step=16 replay.batch_size=2048"

# The sweep's points, most telling first: UPDATES:NUM_ENVS:BATCH:LR (LR: base = the learner's
# 3e-4 / 1.5e-4 schedule; sqrt = scaled by sqrt(BATCH / 2048)).
SWEEP_POINTS=(
  16:2048:2048:base 8:2048:2048:base 16:4096:2048:base 8:4096:4096:sqrt 32:2048:2048:base
  16:8192:4096:sqrt 8:4096:2048:base 16:2048:4096:sqrt 8:8192:8192:sqrt 16:1024:2048:base
  8:4096:4096:base 32:4096:4096:sqrt
)
lr_overrides() {  # lr_overrides BATCH LR: the learning-rate overrides of a point
  [ "$2" = sqrt ] || return 0
  python3 -c "import math; f = math.sqrt($1 / 2048)
print(f'learner.lr_init={3e-4 * f:.3g},learner.lr_peak={3e-4 * f:.3g},learner.lr_end={1.5e-4 * f:.3g}')"
}

case $WHAT in
tests)
  # no log capture (-p no:logging: the env's warnings reach the test's captured stderr), every
  # test's output in the report (-rA), long tracebacks
  step warp_gpu_tests 60 python3 -m pytest -q -p no:cacheprovider -p no:logging -rA --tb=long \
    -m gpu tests/envs/test_g1_warp_gpu.py \
    "tests/runner/test_runner_gpu.py::test_a_stream_lane_runs_the_tick_beside_the_callers_work"
  cp $W/logs/warp_gpu_tests.log $OUT/warp_tests.log
  grep -E "^(E |FAILED|ERROR|PASSED)|passed|failed|capture" $W/logs/warp_gpu_tests.log | tail -n 40
  # Where the captured deterministic step departs from the eager one, if it does: the modes of
  # the diagnosis, then its unlocked mode (Warp calls of two threads at once) in a process of
  # its own, since it may fault, and with Warp's own deterministic mode on every module, in its
  # own too (warp_det.log)
  step warp_det 60 python3 scripts/device/diagnose/warp_det.py graph eager warp_eager
  step warp_det_unlocked 40 python3 scripts/device/diagnose/warp_det.py unlocked
  step warp_det_run_to_run 90 python3 scripts/device/diagnose/warp_det.py run_to_run
  cat $W/logs/warp_det.log $W/logs/warp_det_unlocked.log $W/logs/warp_det_run_to_run.log \
    2>/dev/null > $OUT/warp_det.log
  grep -h "^WARP " $OUT/warp_det.log
  ;;
overlap)
  step device_loop 90 python3 scripts/bench_device_loop.py $AT_2048 "$@" --iterations 200 \
    --rounds 3 --deadline $(($(left) - 40)) --json $OUT/device_loop.json
  cp $W/logs/device_loop.log $OUT/
  tail -n 12 $W/logs/device_loop.log
  ;;
setup)
  for run in first warm warm_main_thread; do
    extra=""; [ $run = warm_main_thread ] && extra="backend.warp.background_build=false"
    step setup_$run 60 python3 -m flashsac_bench $AT_2048 run.iterations=1 run.checkpoint_every=0 \
      run.progress=plain hydra.run.dir=$W/$run $extra "$@"
    python3 - "$W/$run/summary.json" "$run" <<'PY' | tee -a $OUT/setup.txt
import json, sys
s = json.load(open(sys.argv[1]))
st = s.get("startup") or {}
print(sys.argv[2], "| setup_s", round(s.get("setup_s") or 0, 2), "| startup",
      {k: round(v, 2) for k, v in st.items()}, "| compile", s.get("compile"),
      "| env_step", (s.get("training_config") or {}).get("env_step"))
PY
  done
  (cd $W && tar czf $OUT/setup_logs.tgz logs */summary.json)
  ;;
sweep)
  LIMIT=${LIMIT:-75}; PLAN=""
  for point in "${SWEEP_POINTS[@]:${FROM:-0}:${POINTS:-6}}"; do
    IFS=: read -r ups envs batch lr <<< "$point"
    extra="replay.batch_size=$batch,run.checkpoint_every=0"
    lrs=$(lr_overrides $batch $lr); [ -n "$lrs" ] && extra+=",$lrs"
    for s in ${SEEDS:-1}; do PLAN+="$ups:$s:$LIMIT:$envs::$extra "; done
  done
  echo "sweep plan: $PLAN"
  EXPERIMENT=g1_walk_warp EVAL=${EVAL:-0} EVAL_ARGS="render=false ${EVAL_ARGS:-}" \
    bash scripts/device/walk_utd.sh $(left) "$PLAN" "$@"
  ;;
walk)
  LIMIT=${LIMIT:-60}; PLAN=""
  for s in ${SEEDS:-1 2 3 4 5}; do PLAN+="${UPDATES:-}:$s:$LIMIT "; done  # the preset's own
  EXPERIMENT=g1_walk_warp EVAL=end EVAL_ARGS="render=false ${EVAL_ARGS:-}" \
    bash scripts/device/walk_utd.sh $(left) "$PLAN" "$@"
  ;;
*) echo "usage: bash scripts/device/warp_loop.sh tests|overlap|setup|sweep|walk [deadline]"; exit 2 ;;
esac
echo "== warp_loop $WHAT done at ${SECONDS}s"

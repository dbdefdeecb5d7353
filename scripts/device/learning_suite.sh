#!/usr/bin/env bash
# One device call (<= 10 min): learning evidence.
#   1. alone: the compile path's walk (+experiment=g1_walk_h200 path=compile, seed 1) to the
#      walking thresholds (run.stop_at_walk) under WALK_LIMIT s: its measured time to walk;
#   2. then, all at once (per-iteration numbers depend only on the seed, not on the machine's
#      load; their wall-clock axis is stretched): the learning-parity runs, bench_h200 u2,
#      1000 iterations, eager / compile / cudagraph x seeds 1..SEEDS, one env worker process
#      each; beside them the learner GPU tests and the bf16 numerics of the defaults;
#   3. the parity analysis of those runs (scripts/learning_parity.py --analyze).
# Keeps summaries, TensorBoard scalars and logs (no checkpoints) in $OUT/learning.tgz. Runs use
# run.resume=auto: a later call on a still-warm machine continues or skips what an earlier one ran.
#   FLASHSAC_BENCH_COMMIT=<commit> bash scripts/device/learning_suite.sh [deadline_s] [walk_limit_s] [seeds]
source scripts/device/setup.sh
source scripts/device/lib.sh
exec > >(tee -a "$OUT/learning.log") 2>&1
DEADLINE=${1:-560}; WALK_LIMIT=${2:-220}; SEEDS=${3:-5}
W=/tmp/learning; mkdir -p $W/logs $W/parity
export TORCHINDUCTOR_CACHE_DIR=/tmp/ind TRITON_CACHE_DIR=/tmp/tri

# ---- 1. the compile walk, alone ---------------------------------------------------------------
timeout $((WALK_LIMIT + 60)) python3 -m flashsac_bench +experiment=g1_walk_h200 path=compile \
  run.seed=1 run.stop_at_walk=true run.time_limit_s=$WALK_LIMIT hydra.run.dir=$W/walk_compile \
  run.resume=auto \
  run.progress=plain > $W/logs/walk_compile.log 2>&1
echo "== walk_compile rc=$? (at ${SECONDS}s)"
grep -E "stopping|walk|cold" $W/logs/walk_compile.log | tail -n 3

# ---- 2. parity runs + correctness, all at once ------------------------------------------------
run() {  # run PATH SEED: one parity run in the background
  ( timeout -k 10 $(($(left) - 45)) python3 -m flashsac_bench +experiment=bench_h200 update=u2 \
      path=$1 run.seed=$2 backend.workers=1 hydra.run.dir=$W/parity/${1}_s$2 run.resume=auto \
      run.progress=plain > $W/logs/parity_${1}_s$2.log 2>&1
    echo "== parity ${1}_s$2 rc=$? (at ${SECONDS}s)" ) &
  PIDS+=($!)
}
# The compiled paths' first runs fill the shared Inductor cache before their other seeds start.
for s in $(seq 1 $SEEDS); do run eager $s; done
run compile 1; run cudagraph 1
bg gpu_tests 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/learner
bg numerics 300 python3 scripts/validate_numerics.py --device cuda --dtype bfloat16 \
  --paths eager,compile,cudagraph --updates 2,8 --batch-size 256 --iterations 10 \
  --output $OUT/numerics_bf16.json
sleep 75
for s in $(seq 2 $SEEDS); do run compile $s; run cudagraph $s; done
wait "${PIDS[@]}"
echo "---- runs done at ${SECONDS}s"
tail -n 2 $W/logs/gpu_tests.log
grep -h -E "vs|checks:|NUMERICS" $W/logs/numerics.log | tail -n 8

# ---- 3. analysis ----------------------------------------------------------------------------
python3 scripts/learning_parity.py --analyze $W/parity/* --out $W/parity_report \
  > $W/logs/parity_analysis.log 2>&1
echo "== parity analysis rc=$?"
tail -n 25 $W/logs/parity_analysis.log
cp $W/parity_report/parity.json $W/parity_report/parity.md $W/parity_report/parity.png $OUT/ \
  2>/dev/null
cp $W/walk_compile/summary.json $OUT/walk_compile_summary.json 2>/dev/null
find $W -name "*.pt" -delete
tar czf $OUT/learning.tgz -C $W . 2>/dev/null
echo "== done at ${SECONDS}s"

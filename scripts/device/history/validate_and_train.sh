#!/usr/bin/env bash
# One device call (issues 5 + 6), everything packed into $OUT/validate_and_train.tgz:
#   1. in the background: the GPU tests, then the GPU numerics (bf16 judged against an fp32
#      eager oracle; fp32 at "highest" with burn-in);
#   2. beside them, the parity runs whose wall clock does not matter: seeds 2 and 3 of every
#      path at the bench_h200 u2 setting, all six at once (each run's numbers depend only on its
#      seed, not on timing: the runner's data flow is fixed, see runner/loop.py);
#   3. then, alone on the machine, the timed real-training runs of UniLab's protocol (seed 1:
#      also the parity grid's first seed), from a fresh Inductor/Triton cache (the first job's
#      cold_start_s is a cold compile, the first u8 job's one on the warm cache).
#   bash scripts/device/history/validate_and_train.sh [deadline_s]
source scripts/device/setup.sh
DEADLINE=${1:-560}
W=/tmp/work; mkdir -p $W/logs
step() {  # step NAME CMD...: log to $W/logs/NAME.log, never stop the suite
  local name=$1; shift
  local t0=$SECONDS
  "$@" >"$W/logs/$name.log" 2>&1
  echo "== $name rc=$? $((SECONDS - t0))s (at ${SECONDS}s)" | tee -a "$W/logs/suite.txt"
}
checks() {
  step gpu_tests timeout 240 python3 -m pytest -q -p no:cacheprovider \
    tests/learner/test_gpu_paths.py tests/runner/test_runner_gpu.py
  step numerics_bf16 timeout 150 python3 scripts/validate_numerics.py --device cuda \
    --dtype bfloat16 --paths eager,compile,cudagraph --updates 2,8 --batch-size 256 \
    --iterations 10 --output $W/numerics_bf16.json
  step numerics_fp32 timeout 100 python3 scripts/validate_numerics.py --device cuda \
    --dtype float32 --matmul-precision highest --paths eager,compile,cudagraph --updates 2 \
    --batch-size 256 --iterations 10 --output $W/numerics_fp32.json
}
checks &
CHECKS=$!
export TORCHINDUCTOR_COMPILE_THREADS=4
for seed in 2 3; do
  for path in eager compile cudagraph; do
    TORCHINDUCTOR_CACHE_DIR=/tmp/ind_bg TRITON_CACHE_DIR=/tmp/tri_bg timeout 300 \
      python3 -m flashsac_bench +experiment=bench_h200 update=u2 path=$path run.seed=$seed \
      run.progress=plain hydra.run.dir=$W/parity/${path}_s$seed \
      > $W/logs/parity_${path}_s$seed.log 2>&1 &
  done
done
wait $(jobs -p | grep -v "^$CHECKS$")
echo "== parity seeds 2,3 done (at ${SECONDS}s)" | tee -a $W/logs/suite.txt
wait $CHECKS
unset TORCHINDUCTOR_COMPILE_THREADS
grep -h -E "passed|failed|NUMERICS|checks:" $W/logs/gpu_tests.log $W/logs/numerics_*.log | tail -n 12

# 3. The timed runs, alone, from a cold cache: u2 on every path, then u8 compiled (a second
#    process on the now-warm cache: its first job's cold_start_s is the warm-cache figure).
#    u8 eager (~6 min) does not fit this call: it runs in training_rest.sh.
export TORCHINDUCTOR_CACHE_DIR=/tmp/ind_sweep TRITON_CACHE_DIR=/tmp/tri_sweep
left() { local s=$((DEADLINE - SECONDS)); echo $((s > 30 ? s : 30)); }
step sweep_u2 timeout -s TERM -k 15 $(left) python3 -m flashsac_bench -m +experiment=bench_h200 \
  update=u2 path=cudagraph,compile,eager hydra.sweep.dir=$W/sweep run.progress=plain
step sweep_u8 timeout -s TERM -k 15 $(left) python3 -m flashsac_bench -m +experiment=bench_h200 \
  update=u8 path=cudagraph,compile hydra.sweep.dir=$W/sweep run.progress=plain
grep -h "cold start" $W/logs/sweep_*.log | sed 's/.*flashsac_bench: //' | cut -c1-150
python3 scripts/compare.py $W/sweep > $W/logs/compare.log 2>&1
cat $W/sweep/comparison.md 2>/dev/null
find $W -name "*.pt" -delete
tar czf $OUT/validate_and_train.tgz -C $W .
cat $W/logs/suite.txt

#!/usr/bin/env bash
# Learner-side GPU re-run in one device call (issue 5 follow-up): numerics with the fp32 oracle
# (bf16) and with burn-in (fp32 highest), the learner benchmark vs unilab-rl with the current
# defaults (combo kernels on), and the GPU tests of learner and runner.
#   bash scripts/device/learner_suite2.sh [deadline_s]
source scripts/device/setup.sh
DEADLINE=${1:-500}
run() {  # run NAME CMD...: skip past the deadline, log to $OUT/NAME.log, keep going on failure
  local name=$1; shift
  if (( SECONDS > DEADLINE )); then echo "== $name SKIPPED (deadline)" | tee -a "$OUT/suite.txt"; return; fi
  local t0=$SECONDS
  timeout $((DEADLINE + 60 - SECONDS)) "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc $((SECONDS - t0))s" | tee -a "$OUT/suite.txt"
  grep -v Warning "$OUT/$name.log" | grep -v warnings.warn | tail -n 12
}
run numerics_bf16 python3 scripts/validate_numerics.py --device cuda --dtype bfloat16 \
  --paths eager,compile,cudagraph --updates 2,8 --batch-size 256 --iterations 10 \
  --output "$OUT/numerics_bf16.json"
run numerics_fp32 python3 scripts/validate_numerics.py --device cuda --dtype float32 \
  --matmul-precision highest --paths eager,compile,cudagraph --updates 2,8 --batch-size 256 \
  --iterations 10 --output "$OUT/numerics_fp32.json"
run gpu_tests python3 -m pytest -q -p no:cacheprovider tests/learner/test_gpu_paths.py \
  tests/runner/test_runner_gpu.py
run bench python3 scripts/bench_learner.py --device cuda --dtype bfloat16 --batch-sizes 256,2048 \
  --updates 2,8 --paths eager,compile,cudagraph --reference unilab-rl \
  --reference-configs 256x8,2048x8 --output "$OUT/h200_learner.json"
cat "$OUT/suite.txt"

#!/usr/bin/env bash
# Learner-side GPU suite in one device call (results and logs under $OUT):
# numerics, replay stability, learner benchmark vs unilab-rl, GPU tests, kernel profiles.
#   bash scripts/device/history/learner_suite.sh [deadline_s]
source scripts/device/setup.sh
DEADLINE=${1:-540}
run() {  # run NAME CMD...: skip past the deadline, log to $OUT/NAME.log, keep going on failure
  local name=$1; shift
  if (( SECONDS > DEADLINE )); then echo "== $name SKIPPED (deadline)" | tee -a "$OUT/suite.txt"; return; fi
  local t0=$SECONDS
  timeout $((DEADLINE + 50 - SECONDS)) "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc $((SECONDS - t0))s" | tee -a "$OUT/suite.txt"
  grep -v Warning "$OUT/$name.log" | grep -v warnings.warn | tail -n 14
}
run numerics_bf16 python3 scripts/validate_numerics.py --device cuda --dtype bfloat16 \
  --paths eager,compile,cudagraph --updates 2,8 --batch-size 256 --iterations 10 \
  --output "$OUT/numerics_bf16.json"
run stability python3 scripts/validate_replay_stability.py --replays 1000 --batch-size 2048 \
  --updates 8 --output "$OUT/replay_stability.json"
run bench python3 scripts/bench_learner.py --device cuda --dtype bfloat16 --batch-sizes 256,2048 \
  --updates 2,8 --paths eager,compile,cudagraph --reference unilab-rl \
  --reference-configs 256x8,2048x8 --output "$OUT/h200_learner.json"
run numerics_fp32 python3 scripts/validate_numerics.py --device cuda --dtype float32 \
  --matmul-precision highest --paths eager,compile,cudagraph --updates 2 --batch-size 256 \
  --iterations 10 --output "$OUT/numerics_fp32.json"
run gpu_tests python3 -m pytest -q -p no:cacheprovider tests/learner/test_gpu_paths.py
run profile python3 scripts/profile_cycle.py --batch-size 256 --updates 8 --path cudagraph \
  --top 12 --output "$OUT/profile_b256_u8.json"
run profile_combo python3 scripts/profile_cycle.py --batch-size 256 --updates 8 \
  --path cudagraph --top 12 --inductor-option combo_kernels=true \
  --output "$OUT/profile_b256_u8_combo.json"
cat "$OUT/suite.txt"

#!/usr/bin/env bash
# Learner-side GPU suite, one device call: GPU tests, numerics, replay stability, profile.
#   bash scripts/device/learner_suite.sh        (results under $OUT)
source scripts/device/setup.sh
run() {  # run NAME CMD...: log to $OUT/NAME.log, keep going on failure
  local name=$1; shift
  local t0=$SECONDS
  "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc $((SECONDS - t0))s" | tee -a "$OUT/suite.txt"
  tail -n 25 "$OUT/$name.log"
}
run gpu_tests python3 -m pytest -q -p no:cacheprovider tests/learner/test_gpu_paths.py
run numerics_bf16 python3 scripts/validate_numerics.py --device cuda --dtype bfloat16 \
  --paths eager,compile,cudagraph --updates 2,8 --batch-size 256 --iterations 10 \
  --output "$OUT/numerics_bf16.json"
run numerics_fp32 python3 scripts/validate_numerics.py --device cuda --dtype float32 \
  --matmul-precision highest --paths eager,compile,cudagraph --updates 2 --batch-size 256 \
  --iterations 10 --output "$OUT/numerics_fp32.json"
run stability python3 scripts/validate_replay_stability.py --replays 1000 --batch-size 2048 \
  --updates 8 --output "$OUT/replay_stability.json"
run profile python3 scripts/profile_cycle.py --batch-size 256 --updates 8 --path cudagraph \
  --output "$OUT/profile_b256_u8.json"
cat "$OUT/suite.txt"

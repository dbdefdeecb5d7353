#!/usr/bin/env bash
# One device call (issue 12, second part): the standalone learner times of the eager and compile
# paths (B=256, u2 and u8: what the in-runner learner is compared with, same machine, same day),
# then the u8 rows of the real-training sweep (bench_h200: cudagraph, compile, eager), each only
# if it can still finish before the deadline.
#   FLASHSAC_BENCH_COMMIT=<commit> bash scripts/device/sweep_u8_suite.sh [deadline_s]
source scripts/device/setup.sh
source scripts/device/lib.sh
DEADLINE=${1:-560}
W=/tmp/work/$(date +%H%M%S); mkdir -p $W/logs
echo "== 1. standalone learner (at ${SECONDS}s)"
timeout 150 python3 scripts/bench_learner.py --device cuda --dtype bfloat16 --batch-sizes 256 \
  --updates 2,8 --paths eager,compile --output $OUT/learner_standalone.json \
  > $W/logs/bench_learner.log 2>&1
echo "bench_learner rc=$? (at ${SECONDS}s)"; grep -v -i warn $W/logs/bench_learner.log | tail -n 8
echo "== 2. u8 sweep rows (at ${SECONDS}s)"
sweep_rows u8 "cudagraph:70 compile:120 eager:260"
pack sweep_u8

#!/usr/bin/env bash
# The learner on one GPU, in deadline-aware steps (a cut call keeps what finished; results under
# $OUT, the summary printed last):
#
#   bash scripts/device/learner_check.sh [deadline_s]        (default 540: ~9 minutes)
#
#   A. in parallel, timings irrelevant (~4-5 min): the learner's and the runner's GPU tests in ONE
#      process (a test's CUDA graphs must not break another's); bf16 numerics against the fp32
#      oracle (B=256, u2 / u8); 1000 replays of the captured cycle (B=256 u8); every
#      configuration of phase B compiled into ONE shared Inductor / Triton cache.
#   B. alone, on the warm cache (~3 min): the side by side in ONE process per batch size -- ours
#      eager / compile / cudagraph beside unilab-rl 1.4.15's eager and graph, B=256 u2 and u8;
#      compile / cudagraph beside unilab-rl's graph for the u16 cycle at B=2048; then the kernels
#      per u16 cycle at B=2048 (scripts/profile_cycle.py).
#
# Rows: $OUT/learner_b256.json, $OUT/learner_b2048_u16.json (bench_learner.py),
# $OUT/profile_b2048_u16.json, $OUT/numerics_bf16.json, $OUT/replay_b256_u8.json; every step's
# log in $OUT/learner_check.tgz. Needs .whl/ on a lent machine (setup.sh): hydra-core, omegaconf,
# antlr4, gymnasium, unilab-rl 1.4.15.
source scripts/device/setup.sh
source scripts/device/lib.sh
learner_suite learner_check "${1:-540}"
echo "commit ${FLASHSAC_BENCH_COMMIT:-unknown}"
B256=(--batch-sizes 256 --updates 2,8)
B2048=(--batch-sizes 2048 --updates 16)

# ---- A: correctness and compilation, in parallel
bg gpu_tests 300 python3 -m pytest -q -p no:cacheprovider -p no:logging -rfEs --tb=short \
  --durations=15 -m gpu tests/learner tests/runner
bg numerics 220 python3 scripts/validate_numerics.py --device cuda --dtype bfloat16 \
  --paths eager,compile,cudagraph --updates 2,8 --batch-size 256 --iterations 10 \
  --output $OUT/numerics_bf16.json
bg replay 180 python3 scripts/validate_replay_stability.py --replays 1000 --batch-size 256 \
  --updates 8 --output $OUT/replay_b256_u8.json
WARM_LIMIT=220
warm b256 "${B256[@]}" --paths compile,cudagraph --reference unilab-rl
warm b2048 "${B2048[@]}" --paths compile,cudagraph --reference unilab-rl
wait "${PIDS[@]}"
echo "---- phase A done at ${SECONDS}s"

# ---- B: timings, one step at a time
step side_b256 100 $BENCH "${B256[@]}" --paths eager,compile,cudagraph --cycles 40 --warmup 5 \
  --eager-cycles 10 --reference unilab-rl --output $OUT/learner_b256.json
step side_b2048 70 $BENCH "${B2048[@]}" --paths compile,cudagraph --cycles 40 --warmup 5 \
  --reference unilab-rl --output $OUT/learner_b2048_u16.json
step profile 35 python3 scripts/profile_cycle.py --batch-size 2048 --updates 16 --path cudagraph \
  --cycles 5 --top 25 --output $OUT/profile_b2048_u16.json

# ---- summary
echo "==== summary (at ${SECONDS}s)"
echo "gpu tests: $(tail -n 1 $W/logs/gpu_tests.log)"
grep -h -E "^(FAILED|ERROR)" $W/logs/gpu_tests.log | head -n 20
grep -h -E "NUMERICS|bit|oracle" $W/logs/numerics.log | tail -n 8
grep -h -E "REPLAY|FAIL|memory" $W/logs/replay.log | tail -n 6
grep -h -E "failed|Error" $W/logs/warm_*.log | head -n 10
for s in side_b256 side_b2048; do
  [ -f $W/logs/$s.log ] && sed -n '/ratios within this run/,$p' $W/logs/$s.log
done
[ -f $W/logs/profile.log ] && grep -h "kernels/cycle" $W/logs/profile.log
tar czf $OUT/learner_check.tgz -C $W logs 2>/dev/null
echo "== done at ${SECONDS}s"

#!/usr/bin/env bash
# One device call (issue 13, after learner_levers.sh; <= 9 min): with the defaults that call's
# lever table chose, the batch-size scaling table (one process, u8, B=256..8192, compile +
# cudagraph + unilab-rl), B=256 u2 and B=2048 u8 side by side with the old defaults, profiles,
# and 1000 graph replays of the new cudagraph default (state written inside the steps).
#   A. in parallel: compile every configuration of B into one shared cache; replay stability.
#   B. alone, on the warm cache, in priority order, each only if its need fits the deadline.
#   FLASHSAC_BENCH_COMMIT=<commit> bash scripts/device/learner_scaling.sh [deadline_s]
source scripts/device/setup.sh
source scripts/device/lib.sh
learner_suite scaling ${1:-480}
OLD=compile_rng=false,projection_gather=false,functional_steps=true  # defaults before issue 13 part 3
WARM_LIMIT=200
# ---- A ----
for b in 256 1024 2048 4096 8192; do
  warm s$b --batch-sizes $b --updates 8 --paths compile,cudagraph --reference unilab-rl
done
warm u2 --batch-sizes 256 --updates 2 --paths cudagraph --path-variants "base;$OLD" \
  --reference unilab-rl --reference-configs 256x2
warm old2048 --batch-sizes 2048 --updates 8 --paths cudagraph --path-variants "$OLD"
bg stability 260 bash -c "python3 scripts/validate_replay_stability.py --replays 1000 \
  --batch-size 256 --updates 8 --output $OUT/replay_stability_b256_u8.json && \
  python3 scripts/validate_replay_stability.py --replays 1000 --batch-size 2048 --updates 8 \
  --output $OUT/replay_stability_b2048_u8.json"
wait "${PIDS[@]}"
echo "---- phase A done at ${SECONDS}s"
grep -h -E "FAIL|OK|Error" $W/logs/stability.log | tail -n 6
# ---- B ----
step scaling 120 $BENCH --scaling --cycles 30 --warmup 5 --deadline-s $(($(left) - 90)) \
  --output $OUT/h200_learner_scaling.json
step u2 40 $BENCH --batch-sizes 256 --updates 2 --paths compile,cudagraph \
  --path-variants "base;$OLD" --reference unilab-rl --reference-configs 256x2 \
  --output $W/rows/u2.json
step b2048 40 $BENCH --batch-sizes 2048 --updates 8 --paths cudagraph --path-variants "base;$OLD" \
  --reference unilab-rl --reference-configs 2048x8 --output $W/rows/b2048.json
step profile 30 python3 scripts/profile_cycle.py --batch-size 256 --updates 8 --path cudagraph \
  --top 20 --output $OUT/profile_b256_u8.json
step host 25 python3 scripts/profile_cycle.py --batch-size 256 --updates 2 --path compile \
  --top 5 --host-top 25 --output $W/profile_b256_u2_compile.json
python3 scripts/device/rows_summary.py $OUT/h200_learner_rows.json $W/rows/u2.json \
  $W/rows/b2048.json
python3 scripts/device/rows_summary.py - $OUT/h200_learner_scaling.json
grep -h -E "^B=|host:" $W/logs/profile.log $W/logs/host.log
tar czf $OUT/scaling.tgz -C $W . 2>/dev/null
echo "== done at ${SECONDS}s"

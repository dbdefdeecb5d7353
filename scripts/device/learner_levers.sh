#!/usr/bin/env bash
# One device call (issue 13, part three; <= 10 min): every built lever of the learner measured
# side by side, the compile path at u2/u8, the batch-size scaling table, a kernel profile, and
# (issue 12) the compile learner inside training beside its standalone time of the same call.
#   A. in parallel, timings irrelevant: compile every configuration of B into ONE shared
#      Inductor/Triton cache (2 cycles each), and the correctness checks of the defaults: the
#      learner GPU tests, bf16 numerics vs the fp32 oracle, 1000 graph replays.
#   B. alone on the machine, on the warm cache, in priority order (each step only if its need
#      fits before the deadline): the lever table (B=256 u8 cudagraph: defaults, the old
#      defaults, each lever on / off), the compile path (B=256 u2 / u8, defaults and old), the
#      compile learner in bench_h200 training (u2, u8; 600 iterations), the scaling table (one
#      process, u8, B=256..8192, compile + cudagraph + unilab-rl), profiles.
# Needs .whl/ (setup.sh): hydra-core, omegaconf, antlr4, mujoco + mujoco-core, unilab-rl 1.4.15.
#   FLASHSAC_BENCH_COMMIT=<commit> bash scripts/device/learner_levers.sh [deadline_s]
source scripts/device/setup.sh
source scripts/device/lib.sh
learner_suite levers ${1:-560}
OLD=compile_rng=false,projection_gather=false  # the defaults before cf03d86
JS=joint_critic_forward=true,shared_input_stats=true
LEVERS="base;$OLD;compile_rng=false;projection_gather=false;functional_steps=false"
LEVERS="$LEVERS;joint_critic_forward=true;shared_input_stats=true;$JS;$JS,functional_steps=false"
LEVERS="$LEVERS;aligned_layout=true"  # built 2026-12-04 evening, not yet measured
WARM_LIMIT=230
# ---- A. compile everything + correctness (parallel) -----------------------------------------
C256="--batch-sizes 256 --updates 8 --paths cudagraph"
warm g_base $C256 --path-variants "base;compile_rng=false" --reference unilab-rl \
  --reference-configs 256x8
warm g_old $C256 --path-variants "projection_gather=false"
warm g_fun $C256 --path-variants "functional_steps=false"
warm g_joint $C256 --path-variants "joint_critic_forward=true"
warm g_stats $C256 --path-variants "shared_input_stats=true"
warm g_js $C256 --path-variants "$JS;$JS,functional_steps=false"
warm g_align $C256 --path-variants "aligned_layout=true"
warm c256 --batch-sizes 256 --updates 2 --paths compile --path-variants "base;$OLD" \
  --reference unilab-rl --reference-configs 256x2
for b in 1024 2048 4096 8192; do
  warm s$b --batch-sizes $b --updates 8 --paths compile,cudagraph --reference unilab-rl
done
bg gpu_tests 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/learner
bg numerics 300 python3 scripts/validate_numerics.py --device cuda --dtype bfloat16 \
  --paths eager,compile,cudagraph --updates 2,8 --batch-size 256 --iterations 10 \
  --output $OUT/numerics_bf16.json
bg stability 300 python3 scripts/validate_replay_stability.py --replays 1000 \
  --batch-size 2048 --updates 8 --output $OUT/replay_stability.json
wait "${PIDS[@]}"
echo "---- phase A done at ${SECONDS}s"
tail -n 2 $W/logs/gpu_tests.log
grep -h -E "vs|checks:|NUMERICS|error vs" $W/logs/numerics.log | tail -n 12
grep -h -E "FAIL|PASS|REPLAY|Error|memory" $W/logs/stability.log | tail -n 6
grep -h -E "failed|Error" $W/logs/warm_*.log | head -n 10

# ---- B. timing, alone ---------------------------------------------------------------------------
step levers 90 $BENCH $C256 --path-variants "$LEVERS" --reference unilab-rl \
  --reference-configs 256x8 --output $W/rows/levers.json
step compile 50 $BENCH --batch-sizes 256 --updates 2,8 --paths compile --path-variants "base;$OLD" \
  --reference unilab-rl --reference-configs 256x2 --output $W/rows/compile.json
for u in u2 u8; do  # issue 12: the compile learner inside training, same machine start
  step train_$u 75 python3 -m flashsac_bench +experiment=bench_h200 update=$u path=compile \
    run.iterations=600 hydra.run.dir=$W/train_$u run.progress=plain
done
step scaling 100 $BENCH --scaling --cycles 30 --warmup 5 --deadline-s $(($(left) - 60)) \
  --output $OUT/h200_learner_scaling.json
step profile 45 python3 scripts/profile_cycle.py --batch-size 256 --updates 8 --path cudagraph \
  --top 20 --output $OUT/profile_b256_u8.json
step host 40 python3 scripts/profile_cycle.py --batch-size 256 --updates 2 --path compile \
  --top 5 --host-top 25 --output $W/profile_b256_u2_compile.json

# ---- summary ------------------------------------------------------------------------------------
echo; echo "== learner rows (median ms)"
python3 scripts/device/rows_summary.py $OUT/h200_learner_levers.json $W/rows/levers.json \
  $W/rows/compile.json
for u in u2 u8; do  # the compile learner in training: the runner's closing line
  echo "in training, $u compile: $(grep -h -o 'complete: .*' $W/logs/train_$u.log | tail -n 1)"
done
echo "== scaling (u8)"; python3 scripts/device/rows_summary.py - $OUT/h200_learner_scaling.json
find $W -name "*.pt" -delete; find $W -name "events.out.tfevents*" -delete
tar czf $OUT/levers.tgz -C $W . 2>/dev/null
echo "== done at ${SECONDS}s"

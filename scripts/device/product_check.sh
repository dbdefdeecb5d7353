#!/usr/bin/env bash
# The GPU check of the product: the learner beside unilab-rl, numerics, replays, the GPU tests
# and the seed's in-training table, in deadline-aware steps (a cut call keeps what finished).
# The walk is scripts/device/walk_utd.sh. One command per device call:
#
#   bash scripts/device/product_check.sh learner [deadline_s]
#     A. in parallel, timings irrelevant: compile every timed configuration into ONE shared
#        Inductor / Triton cache; the GPU tests (both files in one process, and each alone);
#        bf16 numerics against the fp32 oracle (compile == cudagraph bit for bit); 1000 replays
#        of the captured cycle at B=256 and B=2048 (u8).
#     B. alone, on the warm cache: the side by side (eager, compile, cudagraph and unilab-rl
#        1.4.15 in one process; B=256 u2, B=256 u8, B=2048 u8 without eager), then two more
#        processes without eager while the deadline allows.
#   bash scripts/device/product_check.sh reps [deadline_s] [repetitions]
#     more repetitions of the side by side (compile, cudagraph, unilab-rl), one process each,
#     on the cache the learner step left when the machine stayed warm.
#   bash scripts/device/product_check.sh seed [deadline_s] [paths]
#     the seed's measure: +experiment=bench_h200 (256 envs, batch 256, 1000 iterations, the
#     last 500) for u2 / u8 on each path (default "compile cudagraph eager"), one run at a time.
#
# Rows: $OUT/learner_rep<k>.json (bench_learner.py), $OUT/numerics_bf16.json,
# $OUT/replay_b{256,2048}_u8.json, $OUT/seed.tgz (the runs' summaries); logs in $OUT/<step>.tgz.
# Needs .whl/ on the lent machine (setup.sh): hydra-core, omegaconf, antlr4, mujoco +
# mujoco-core, glfw, pyopengl, unilab-rl 1.4.15.
source scripts/device/setup.sh
source scripts/device/lib.sh
WHAT=${1:-learner}
learner_suite "product_$WHAT" "${2:-560}"
echo "commit ${FLASHSAC_BENCH_COMMIT:-unknown}"
CONFIGS=("--batch-sizes 256 --updates 2,8" "--batch-sizes 2048 --updates 8")

side_by_side() {  # side_by_side REP PATHS: one process per config set, rows in $OUT
  local rep=$1 paths=$2 i=0
  for c in "${CONFIGS[@]}"; do
    i=$((i + 1))
    # eager only at B=256: the README's eager column; at B=2048 it would take minutes
    [ $i -gt 1 ] && paths=${paths#eager,}
    step rep${rep}_$i 75 $BENCH $c --paths $paths --cycles 100 --warmup 10 \
      --eager-cycles 100 --reference unilab-rl --reference-configs all \
      --output $W/rows/rep${rep}_$i.json || true
    tail -n 6 $W/logs/rep${rep}_$i.log
  done
  python3 scripts/device/rows_summary.py $OUT/learner_rep$rep.json $W/rows/rep${rep}_*.json
}

case $WHAT in
learner)
  WARM_LIMIT=280
  for c in "${CONFIGS[@]}"; do
    warm "${c//[^0-9]/}" $c --paths compile,cudagraph --reference unilab-rl --reference-configs all
  done
  bg gpu_one_process 300 python3 -m pytest -q -p no:cacheprovider \
    tests/runner/test_runner_gpu.py tests/learner/test_gpu_paths.py
  bg gpu_learner_alone 300 python3 -m pytest -q -p no:cacheprovider tests/learner/test_gpu_paths.py
  bg gpu_runner_alone 300 python3 -m pytest -q -p no:cacheprovider tests/runner/test_runner_gpu.py
  bg numerics 280 python3 scripts/validate_numerics.py --device cuda --dtype bfloat16 \
    --paths eager,compile,cudagraph --updates 2,8 --batch-size 256 --iterations 10 \
    --output $OUT/numerics_bf16.json
  for b in 256 2048; do
    bg replay_b$b 280 python3 scripts/validate_replay_stability.py --replays 1000 \
      --batch-size $b --updates 8 --output $OUT/replay_b${b}_u8.json
  done
  wait "${PIDS[@]}"
  echo "---- phase A done at ${SECONDS}s"
  for t in gpu_one_process gpu_learner_alone gpu_runner_alone; do
    echo "$t: $(tail -n 1 $W/logs/$t.log)"
  done
  grep -h -E "^(FAILED|ERROR)" $W/logs/gpu_*.log | sort | uniq -c | head -n 20
  grep -h -E "NUMERICS|bit|oracle" $W/logs/numerics.log | tail -n 8
  grep -h -E "REPLAY|FAIL|memory" $W/logs/replay_b*.log | tail -n 8
  grep -h -E "failed|Error" $W/logs/warm_*.log | head -n 10
  side_by_side 1 eager,compile,cudagraph
  for rep in 2 3; do  # more processes while the deadline allows
    [ "$(left)" -gt 160 ] && side_by_side $rep compile,cudagraph
  done
  ;;
reps)
  for rep in $(seq 2 $((1 + ${3:-2}))); do side_by_side $rep compile,cudagraph; done
  ;;
seed)
  for path in ${3:-compile cudagraph eager}; do
    for u in u2 u8; do  # compile + 1000 iterations: ~60 s compiled, minutes eager
      need=$([ $path = eager ] && echo 330 || echo 90)
      if [ "$(left)" -lt "$need" ]; then echo "skip $u $path: $(left) s left"; continue; fi
      timeout $(($(left) - 5)) python3 -m flashsac_bench +experiment=bench_h200 update=$u \
        path=$path hydra.run.dir=$W/sweep/${u}_$path run.progress=plain \
        > $W/logs/${u}_$path.log 2>&1
      echo "$u $path rc=$? (at ${SECONDS}s)"; tail -n 1 $W/logs/${u}_$path.log
    done
  done
  python3 scripts/compare.py $W/sweep/* --out $W/sweep > $W/logs/compare.log 2>&1
  cat $W/sweep/comparison.md 2>/dev/null
  find $W -name "*.pt" -delete; find $W -name "events.out.tfevents*" -delete
  tar czf $OUT/seed.tgz -C $W sweep
  ;;
*)
  echo "unknown step $WHAT (learner, reps or seed)"; exit 2
  ;;
esac
find $W -name "*.pt" -delete
tar czf $OUT/product_$WHAT.tgz -C $W logs 2>/dev/null
echo "== done at ${SECONDS}s"

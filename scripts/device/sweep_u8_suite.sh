#!/usr/bin/env bash
# One device call (issue 12, second part): the standalone learner times of the eager and compile
# paths (B=256, u2 and u8: what the in-runner learner is compared with, same machine, same day),
# then the u8 rows of the real-training sweep (bench_h200: cudagraph, compile, eager), each only
# if it can still finish before the deadline.
#   FLASHSAC_BENCH_COMMIT=<commit> bash scripts/device/sweep_u8_suite.sh [deadline_s]
source scripts/device/setup.sh
DEADLINE=${1:-560}
W=/tmp/work; mkdir -p $W/logs
left() { echo $((DEADLINE - SECONDS)); }
echo "== 1. standalone learner (at ${SECONDS}s)"
timeout 150 python3 scripts/bench_learner.py --device cuda --dtype bfloat16 --batch-sizes 256 \
  --updates 2,8 --paths eager,compile --output $OUT/learner_standalone.json \
  > $W/logs/bench_learner.log 2>&1
echo "bench_learner rc=$? (at ${SECONDS}s)"; grep -v -i warn $W/logs/bench_learner.log | tail -n 8
echo "== 2. u8 sweep rows (at ${SECONDS}s)"
for item in cudagraph:70 compile:120 eager:260; do
  path=${item%%:*}; need=${item##*:}
  if [ "$(left)" -lt "$need" ]; then echo "skip u8 $path: $(left) s left"; continue; fi
  timeout $(( $(left) - 5 )) python3 -m flashsac_bench +experiment=bench_h200 update=u8 \
    path=$path hydra.run.dir=$W/sweep/u8_$path run.progress=plain > $W/logs/u8_$path.log 2>&1
  echo "u8 $path rc=$? (at ${SECONDS}s)"; tail -n 1 $W/logs/u8_$path.log
done
python3 scripts/compare.py $W/sweep/* --out $W/sweep > $W/logs/compare.log 2>&1
cp $W/sweep/comparison.md $W/sweep/comparison.csv $W/sweep/comparison.png $OUT/ 2>/dev/null
find $W -name "*.pt" -path "*checkpoints*" -delete
find $W -name "events.out.tfevents*" -delete
tar czf $OUT/sweep_u8.tgz -C $W .
echo "== done at ${SECONDS}s"
cat $OUT/comparison.md 2>/dev/null

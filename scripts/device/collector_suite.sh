#!/usr/bin/env bash
# One device call (issue 12, worker-process env shards), deadline-aware, in priority order:
#   1. CPU topology; bench_env: thread pool vs worker processes at 256 / 1024 / 4096 envs, each
#      beside its raw-physics ceiling (rows -> $OUT/h200_env.json);
#   2. the walking G1 (+experiment=g1_walk_h200, cudagraph) under a time limit, its time to the
#      thresholds (learning_parity --analyze), a deterministic 16-episode evaluation with GIF;
#   3. the u2 rows of the real-training sweep (bench_h200: cudagraph, compile, eager), each only
#      if it can finish before the deadline.
#   bash scripts/device/collector_suite.sh [deadline_s] [walk_limit_s]
# Needs the wheels of scripts/device/setup.sh in .whl/ and the EGL loader debs in .gl/.
source scripts/device/setup.sh
source scripts/device/lib.sh
DEADLINE=${1:-570}
WALK_LIMIT=${2:-160}
W=/tmp/work/$(date +%H%M%S); mkdir -p $W/logs
egl_rendering

lscpu | grep -E "^(CPU\(s\)|Thread|Core|Socket|Model name|NUMA node\(s\))"
python3 -c "import os; print('affinity', len(os.sched_getaffinity(0)))"

echo "== 1. bench_env (at ${SECONDS}s)"
timeout 200 python3 scripts/bench_env.py --num-envs 256 1024 4096 --threads 16 --workers 15 16 \
  --ceiling --steps 80 --warmup 20 --repeats 1 --deadline 150 --results $OUT/h200_env.json \
  2>&1 | tee $W/logs/bench_env.txt

echo "== 2. walk (at ${SECONDS}s)"
RUN=$W/walk
timeout $((WALK_LIMIT + 60)) python3 -m flashsac_bench +experiment=g1_walk_h200 \
  run.time_limit_s=$WALK_LIMIT hydra.run.dir=$RUN run.progress=plain > $W/logs/walk.log 2>&1
echo "walk rc=$? (at ${SECONDS}s)"; tail -n 2 $W/logs/walk.log
timeout 60 python3 scripts/learning_parity.py --analyze $RUN --out $W/walk_an \
  > $W/logs/analyze.log 2>&1
sed -n '/Time to/,/Speed/p' $W/walk_an/parity.md
timeout 120 python3 -m flashsac_bench.evaluate checkpoint=$RUN device=cuda episodes=16 \
  num_envs=16 > $W/logs/eval.log 2>&1
echo "eval rc=$? (at ${SECONDS}s)"; tail -n 4 $W/logs/eval.log
cp $RUN/eval.gif $RUN/eval_strip.png $RUN/eval.json $OUT/ 2>/dev/null

echo "== 3. u2 sweep rows (at ${SECONDS}s)"
# Rough need per run (s): setup + compile/capture + 1000 iterations, from earlier H200 runs.
sweep_rows u2 "cudagraph:60 compile:110 eager:130"
pack collector

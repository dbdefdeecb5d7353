#!/usr/bin/env bash
# One device call (issue 6): train the walking G1 (+experiment=g1_walk_h200) on each given path
# under a wall-clock limit (run.time_limit_s: counted from the run's start, env build and
# compile/capture included; the run then ends complete, with its final checkpoint), evaluate the
# first path's policy deterministically with an EGL-rendered GIF + PNG strip, export it, and
# compute every run's time to the issue-6 thresholds. Packed into $OUT/walk.tgz (no checkpoints).
#   bash scripts/device/walk_suite.sh "cudagraph:225 compile:290" [hydra overrides...]
# Needs the EGL loader debs in .gl/ (see /work/.library/device/README.md) and PyOpenGL in .whl/
# (MuJoCo's EGL backend imports it) for rendering.
source scripts/device/setup.sh
PLAN=${1:-"cudagraph:225"}; shift || true
egl_rendering
W=/tmp/work/$(date +%H%M%S); mkdir -p $W/logs
RUNS=()
for item in $PLAN; do
  path=${item%%:*}; limit=${item##*:}; RUN=$W/walk_$path; RUNS+=("$RUN")
  python3 -m flashsac_bench +experiment=g1_walk_h200 path=$path run.time_limit_s=$limit \
    hydra.run.dir=$RUN run.progress=plain "$@" > $W/logs/walk_$path.log 2>&1
  echo "== walk $path rc=$? (at ${SECONDS}s)" | tee -a $W/logs/suite.txt
  grep -E "iter [0-9]+/" $W/logs/walk_$path.log | awk 'NR % 50 == 0'
  tail -n 2 $W/logs/walk_$path.log
  if [ ${#RUNS[@]} -eq 1 ]; then  # evaluate + render + export the first path's policy
    timeout 120 python3 -m flashsac_bench.evaluate checkpoint=$RUN device=cuda episodes=16 \
      num_envs=16 > $W/logs/eval.log 2>&1
    echo "== eval rc=$? (at ${SECONDS}s)" | tee -a $W/logs/suite.txt; tail -n 4 $W/logs/eval.log
    timeout 60 python3 -m flashsac_bench.export checkpoint=$RUN out_dir=$W/export onnx=false \
      >> $W/logs/eval.log 2>&1
    echo "== export rc=$?" | tee -a $W/logs/suite.txt
  fi
done
timeout 60 python3 scripts/learning_parity.py --analyze "${RUNS[@]}" --out $W/walk_an \
  > $W/logs/analyze.log 2>&1
sed -n '/Time to/,/Speed/p' $W/walk_an/parity.md
find $W -name "*.pt" -path "*checkpoints*" -delete
cp $RUNS/eval.gif $RUNS/eval_strip.png $OUT/ 2>/dev/null
tar czf $OUT/walk.tgz -C $W .
cat $W/logs/suite.txt

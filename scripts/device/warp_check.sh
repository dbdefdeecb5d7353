#!/usr/bin/env bash
# backend=mjwarp on a lent GPU, after `warp_carry.sh install` (Warp in /tmp/site). One step per
# call; each starts nothing that cannot finish before its deadline and keeps its logs and rows
# under $OUT.
#   bash scripts/device/warp_check.sh tests [deadline]   the Warp GPU tests (builds Warp's kernel cache)
#   bash scripts/device/warp_check.sh env [deadline]     env-steps/s: mjwarp (full task and its physics
#       ceiling) at 1024-16384 worlds, then the CPU backend's 1024-env row and its ceiling (15 workers)
#   SEEDS="1 2 3 4 5" LIMIT=60 bash scripts/device/warp_check.sh walk [deadline]
#       +experiment=g1_walk_warp per seed to the walking thresholds or LIMIT s, each policy then
#       evaluated in CPU MuJoCo (16 episodes of 1000 steps); the iteration's split from the rows
source scripts/device/setup.sh
source scripts/device/lib.sh
WHAT=${1:-tests}; DEADLINE=${2:-560}; shift 2 || shift $#  # the rest: Hydra overrides (walk)
W=/tmp/warp_check/$WHAT; mkdir -p $W/logs
exec > >(tee -a "$OUT/warp_$WHAT.log") 2>&1
export TORCHINDUCTOR_CACHE_DIR=/tmp/ind TRITON_CACHE_DIR=/tmp/tri  # shared by the calls
python3 -c "import warp, mujoco_warp; print('warp', warp.__version__)" || exit 2

case $WHAT in
tests)
  # no log capture: a failure's own text, not pages of torch's debug records
  step warp_gpu_tests 60 python3 -m pytest -q -p no:cacheprovider -p no:logging -m gpu \
    tests/envs/test_g1_warp_gpu.py
  cp $W/logs/warp_gpu_tests.log $OUT/
  grep -E "^(E |FAILED|ERROR)|passed|failed" $W/logs/warp_gpu_tests.log | tail -n 40
  ;;
env)
  step mjwarp 120 python3 scripts/bench_env.py --backend mjwarp --warp-device cuda \
    --num-envs 1024 4096 8192 16384 --ceiling --steps 200 --repeats 3 \
    --deadline $(($(left) - 150)) --json $OUT/env_mjwarp.json
  tail -n 20 $W/logs/mjwarp.log
  step cpu 60 python3 scripts/bench_env.py --backend mujoco --num-envs 1024 --workers 15 \
    --ceiling --steps 200 --repeats 3 --deadline $(($(left) - 20)) --json $OUT/env_cpu.json
  tail -n 8 $W/logs/cpu.log
  ;;
walk)
  LIMIT=${LIMIT:-60}; PLAN=""
  for s in ${SEEDS:-1 2 3 4 5}; do PLAN+="8:$s:$LIMIT "; done
  EXPERIMENT=g1_walk_warp EVAL=1 EVAL_ARGS="render=false ${EVAL_ARGS:-}" WARMUP=${WARMUP-4096} \
    bash scripts/device/walk_utd.sh $(left) "$PLAN" "$@"
  # the iteration's split per run: env step, learner cycle, replay insert, the policy's action
  for f in /tmp/work/*/utd/*/summary.json; do
    python3 - "$f" <<'PY'
import json, statistics, sys
s = json.load(open(sys.argv[1]))
rows = [r for r in s.get("rows_all", []) if r.get("iter_ms")]
def med(k):
    v = [r[k] for r in rows[len(rows) // 2:] if isinstance(r.get(k), (int, float))]
    return round(statistics.median(v), 2) if v else None
print(sys.argv[1].split("/")[-2], "iterations", s.get("iterations_done"), "stopped_by",
      s.get("stopped_by"), "| median of the 2nd half, ms: iter", med("iter_ms"), "env_step",
      med("env_step_ms"), "learner", med("learner_train_ms"), "insert", med("insert_ms"), "action", med("action_ms"),
      "| env_step mode", (s.get("training_config") or {}).get("env_step"))
PY
  done | tee $OUT/warp_split.txt
  ;;
*) echo "usage: bash scripts/device/warp_check.sh tests|env|walk [deadline]"; exit 2 ;;
esac

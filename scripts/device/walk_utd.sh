#!/usr/bin/env bash
# One device call (issue 16): the walking G1 (+experiment=g1_walk_h200) at several update-to-data
# ratios and seeds, each run ending at the walking thresholds (run.stop_at_walk) or its time
# limit, optionally evaluated (16 episodes of 1000 steps + EVAL_ARGS). Runs in the order given,
# each only if it can finish before the deadline. Keeps summary.json, TensorBoard scalars and
# logs (no checkpoints) in $OUT/walk_utd.tgz.
#   bash scripts/device/walk_utd.sh DEADLINE_S "UPDATES:SEED:LIMIT_S ..." [hydra overrides...]
#   e.g. bash scripts/device/walk_utd.sh 570 "8:1:170 16:1:140"
# UPDATES sets update.updates_per_step (policy_frequency stays 2: UPDATES/2 actor and
# temperature updates); STOP_AT_WALK=false trains on to the run's end. EVAL=1 evaluates each
# run's final policy (EVAL_ARGS: extra options, EVAL_TIMEOUT: its limit in s).
source scripts/device/setup.sh
source scripts/device/lib.sh
DEADLINE=${1:-570}; PLAN=${2:-"8:1:170"}; shift 2 || true
W=/tmp/work; mkdir -p $W/logs $W/utd
egl_rendering
for item in $PLAN; do
  IFS=: read -r ups seed limit <<< "$item"
  name=u${ups}_s$seed; RUN=$W/utd/$name
  need=$((limit + 30 + ${EVAL:-0} * ${EVAL_TIMEOUT:-60}))
  if [ "$(left)" -lt "$need" ]; then echo "skip $name: $(left) s left, needs $need"; continue; fi
  timeout $((limit + 60)) python3 -m flashsac_bench +experiment=g1_walk_h200 \
    update.name=u$ups update.updates_per_step=$ups run.seed=$seed run.stop_at_walk=${STOP_AT_WALK:-true} \
    run.time_limit_s=$limit hydra.run.dir=$RUN run.progress=plain "$@" > $W/logs/$name.log 2>&1
  echo "== $name rc=$? (at ${SECONDS}s)"
  grep -E "stopping|time to|cold|setup" $W/logs/$name.log | tail -n 3
  python3 - "$RUN/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(" ", s.get("stopped_by"), "| iterations", s.get("iterations_done"),
      "| startup", {k: round(v, 1) for k, v in (s.get("startup") or {}).items()
                    if isinstance(v, float)})
PY
  if [ "${EVAL:-0}" = 1 ]; then
    timeout ${EVAL_TIMEOUT:-120} python3 -m flashsac_bench.evaluate checkpoint=$RUN device=cuda episodes=16 \
      num_envs=16 ${EVAL_ARGS:-} > $W/logs/${name}_eval.log 2>&1
    echo "   eval rc=$?"; tail -n 3 $W/logs/${name}_eval.log
  fi
  find $RUN -name "*.pt" -path "*checkpoints*" -delete
done
cp $W/utd/*/eval.gif $OUT/ 2>/dev/null
tar czf $OUT/walk_utd.tgz -C $W .
echo "== done at ${SECONDS}s"

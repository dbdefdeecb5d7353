#!/usr/bin/env bash
# One device call: the walking G1 (+experiment=$EXPERIMENT, default g1_walk_h200) at
# several update-to-data ratios, env counts and seeds, each run ending at the walking thresholds
# (run.stop_at_walk) or its time limit, optionally evaluated (16 episodes of 1000 steps +
# EVAL_ARGS). Runs in the order given, each only if it can finish before the deadline. Keeps
# summary.json, TensorBoard scalars and logs (no checkpoints) in $OUT/walk_utd.tgz.
#   bash scripts/device/walk_utd.sh DEADLINE_S "UPDATES:SEED:LIMIT_S[:NUM_ENVS[:PATH[:OVERRIDES]]] ..." [overrides...]
#   e.g. bash scripts/device/walk_utd.sh 570 "8:1:170 16:1:140 16:1:90:512 8:2:170::compile \
#          8:1:170:::backend.workers=16"
# UPDATES sets update.updates_per_step (policy_frequency stays 2: UPDATES/2 actor and
# temperature updates; empty: the experiment's own, the run named "preset"); NUM_ENVS sets run.num_envs (default: the experiment's), PATH the execution
# path (default: the experiment's; the run's name gains _PATH), OVERRIDES more Hydra overrides
# for that run only, comma-separated (the run's name gains each one's last key part and value,
# e.g. _workers16). STOP_AT_WALK=false
# trains on to the run's limit. WARMUP="NUM_ENVS ..." first runs one iteration per env count so
# the timed runs find Inductor's cache warm (the compiled steps depend on the replay ring's size,
# i.e. on num_envs). EVAL=1 evaluates each run's final policy right after it, EVAL=end all of
# them at once after the last run (EVAL_ARGS: extra options, EVAL_TIMEOUT: the limit in s).
# PROBE=N times MuJoCo alone at N envs in 15 worker processes, before the first run and after
# the last: machines of one kind differ in CPU speed, and this says by how much.
source scripts/device/setup.sh
source scripts/device/lib.sh
DEADLINE=${1:-570}; PLAN=${2:-"8:1:170"}; shift 2 || true
EXPERIMENT=${EXPERIMENT:-g1_walk_h200}; EVAL=${EVAL:-0}
W=/tmp/work/$(date +%H%M%S); mkdir -p $W/logs $W/utd
egl_rendering
train() {  # train RUN_DIR LOG LIMIT_S OVERRIDES...
  local run=$1 logf=$2 limit=$3; shift 3
  timeout $((limit + 60)) python3 -m flashsac_bench +experiment=$EXPERIMENT hydra.run.dir=$run \
    run.progress=plain "$@" > $logf 2>&1
}
evaluate() {  # evaluate RUN_DIR NAME
  timeout ${EVAL_TIMEOUT:-120} python3 -m flashsac_bench.evaluate checkpoint=$1 device=cuda \
    episodes=16 num_envs=16 ${EVAL_ARGS:-} > $W/logs/$2_eval.log 2>&1
  echo "   $2 eval rc=$?"; tail -n 3 $W/logs/$2_eval.log
}
probe() {  # probe LABEL: env-steps/s of the bare env and its physics ceiling at $PROBE envs
  [ -n "${PROBE:-}" ] || return 0
  timeout 90 python3 scripts/bench_env.py --num-envs $PROBE --workers 15 --ceiling --steps 200 \
    --repeats 3 --deadline 45 > $W/logs/probe_$1.log 2>&1
  echo "== env probe ($1, at ${SECONDS}s):"; tail -n 3 $W/logs/probe_$1.log
}
probe start
for envs in ${WARMUP:-}; do
  train $W/warm_e$envs $W/logs/warm_e$envs.log 120 run.num_envs=$envs run.iterations=1 \
    run.checkpoint_every=0
  echo "== warm-up at $envs envs rc=$? (at ${SECONDS}s)"; grep -o "cold start [0-9.]* s" $W/logs/warm_e$envs.log
done
RUNS=()
for item in $PLAN; do
  IFS=: read -r ups seed limit envs path extra <<< "$item"
  tag=""; for o in ${extra//,/ }; do k=${o%%=*}; tag+="_${k##*.}${o#*=}"; done
  label=preset; [ -n "$ups" ] && label=u$ups
  name=$label${envs:+_e$envs}${path:+_$path}${tag}_s$seed; RUN=$W/utd/$name
  need=$((limit + 30)); [ "$EVAL" = 0 ] || need=$((need + ${EVAL_TIMEOUT:-120}))  # EVAL=end: its evaluations must still fit
  if [ "$(left)" -lt "$need" ]; then echo "skip $name: $(left) s left, needs $need"; continue; fi
  train $RUN $W/logs/$name.log $limit ${ups:+update.updates_per_step=$ups} \
    run.seed=$seed run.stop_at_walk=${STOP_AT_WALK:-true} run.time_limit_s=$limit \
    ${envs:+run.num_envs=$envs} ${path:+path=$path} ${extra//,/ } "$@"
  echo "== $name rc=$? (at ${SECONDS}s)"
  grep -E "stopping|time to|cold|setup" $W/logs/$name.log | tail -n 3
  python3 - "$RUN/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(" ", s.get("stopped_by"), "| iterations", s.get("iterations_done"),
      "| setup", round(s.get("setup_s") or 0.0, 1),
      "| startup", {k: round(v, 1) for k, v in (s.get("startup") or {}).items()
                    if isinstance(v, float)},
      "| checkpoints held the loop", [(c["iteration"], round(c.get("blocking_s", c["s"]), 2))
                                      for c in s.get("checkpoints", [])])
PY
  RUNS+=("$RUN")
  if [ "$EVAL" = 1 ]; then evaluate $RUN $name; fi
  # evaluations at the end still need the checkpoint; others are done with it
  [ "$EVAL" = end ] || find $RUN -name "*.pt" -path "*checkpoints*" -delete
done
if [ "$EVAL" = end ] && [ ${#RUNS[@]} -gt 0 ]; then  # all at once: 16 envs each, 16 cores
  for RUN in "${RUNS[@]}"; do evaluate $RUN "$(basename $RUN)" & done; wait
  echo "== evaluations done at ${SECONDS}s"
fi
probe end
[ ${#RUNS[@]} -gt 0 ] && timeout 60 python3 scripts/walk_utd.py "${RUNS[@]}" --out $W/table \
  > $W/logs/table.log 2>&1 && cat $W/table/walk_utd.md
find $W -name "*.pt" -path "*checkpoints*" -delete
cp $W/utd/*/eval.gif $OUT/ 2>/dev/null
tar czf $OUT/walk_utd.tgz -C $W .
echo "== done at ${SECONDS}s"

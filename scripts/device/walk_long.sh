#!/usr/bin/env bash
# A walk longer than one device call (issue 16: the eager path's walk to the thresholds), one
# segment per call: the first call starts the run, each later one resumes it from its newest
# checkpoint (bit for bit the uninterrupted run; rows' time_s runs on across the segments), until
# the walking thresholds stop it (run.stop_at_walk). The run dir lives in the checkout
# (outputs/, ignored) so that it survives between two calls on a machine that stayed warm; on a
# fresh machine the run starts again. Each call packs logs, summary and TensorBoard scalars (no
# checkpoints) into $OUT/NAME.tgz.
#   bash scripts/device/walk_long.sh NAME LIMIT_S [hydra overrides...]
#   e.g. bash scripts/device/walk_long.sh eager 560 path=eager
# LIMIT_S is the segment's run.time_limit_s (setup included); the same overrides every call.
source scripts/device/setup.sh
NAME=$1; LIMIT=$2; shift 2
RUN=$PWD/outputs/device_walks/$NAME; mkdir -p $RUN/../logs
LOG=$RUN/../logs/${NAME}_$(date +%H%M%S).log
if [ -f $RUN/checkpoints/latest.txt ]; then
  echo "== resuming $NAME from $(cat $RUN/checkpoints/latest.txt)"; RESUME=(run.resume=$RUN)
else
  echo "== starting $NAME"; RESUME=()
fi
timeout $((LIMIT + 60)) python3 -m flashsac_bench +experiment=${EXPERIMENT:-g1_walk_h200} \
  hydra.run.dir=$RUN run.progress=plain run.stop_at_walk=true run.time_limit_s=$LIMIT "$@" \
  "${RESUME[@]}" > $LOG 2>&1
echo "== $NAME rc=$? (at ${SECONDS}s)"
grep -E "iter [0-9]+/" $LOG | awk 'NR % 40 == 0'
grep -E "stopping|resum|cold start" $LOG | tail -n 4
tar czf $OUT/$NAME.tgz --exclude='*.pt' -C $RUN/.. $NAME logs

#!/usr/bin/env bash
# One device call (issue 5): the u8 eager run of the real-training protocol on its own (about
# 6 min: 1000 iterations of ~340 ms), packed into $OUT/u8_eager.tgz.
#   bash scripts/device/u8_eager.sh [deadline_s]
source scripts/device/setup.sh
W=/tmp/work; mkdir -p $W/logs
timeout -s TERM -k 15 "${1:-560}" python3 -m flashsac_bench -m +experiment=bench_h200 update=u8 \
  path=eager hydra.sweep.dir=$W/sweep run.progress=plain > $W/logs/u8_eager.log 2>&1
echo "== u8 eager rc=$? ${SECONDS}s"
grep -E "complete|interrupted|cold start" $W/logs/u8_eager.log | tail -n 3
find $W -name "*.pt" -delete
tar czf $OUT/u8_eager.tgz -C $W .

#!/usr/bin/env bash
# The real-training four-way sweep alone (see training_suite.sh).  bash scripts/device/history/sweep_only.sh [deadline_s]
source scripts/device/setup.sh
DEADLINE=${1:-400}
SWEEP=/tmp/sweep
timeout $((DEADLINE - SECONDS)) python3 -m flashsac_bench -m +experiment=bench_h200 \
  update=u2,u8 path=cudagraph,compile,eager hydra.sweep.dir=$SWEEP run.progress=plain \
  > "$OUT/sweep.log" 2>&1
echo "== sweep rc=$? ${SECONDS}s"
python3 scripts/compare.py $SWEEP > "$OUT/compare.log" 2>&1 || true
cp $SWEEP/comparison.md $SWEEP/comparison.csv $SWEEP/comparison.png "$OUT/" 2>/dev/null
python3 - "$SWEEP" "$OUT/training_summaries.json" <<'PY'
import glob, json, sys
runs = []
for path in sorted(glob.glob(f"{sys.argv[1]}/*/summary.json")):
    with open(path) as f:
        runs.append({"run_dir": path.rsplit("/", 2)[-2], **json.load(f)})
json.dump(runs, open(sys.argv[2], "w"))
print(len(runs), "summaries")
PY
grep -E "complete|incomplete|cold start|Error|error" "$OUT/sweep.log" | tail -n 20
cat "$OUT/comparison.md" 2>/dev/null

#!/usr/bin/env bash
# One device call: GPU numerics (bf16, burn-in + lockstep), then the real-training four-way
# sweep through the runner (256 envs on the machine's CPU cores, batch 256, 1000 iterations).
#   bash scripts/device/training_suite.sh [deadline_s]
source scripts/device/setup.sh
DEADLINE=${1:-560}
python3 scripts/validate_numerics.py --device cuda --dtype bfloat16 --paths eager,compile,cudagraph \
  --updates 2,8 --batch-size 256 --iterations 10 --output "$OUT/numerics_bf16.json" \
  > "$OUT/numerics_bf16.log" 2>&1
echo "== numerics rc=$? ${SECONDS}s"; grep -v -i warn "$OUT/numerics_bf16.log" | tail -n 8
SWEEP=/tmp/sweep
timeout $((DEADLINE - SECONDS)) python3 -m flashsac_bench -m +experiment=bench_h200 \
  update=u2,u8 path=cudagraph,compile,eager hydra.sweep.dir=$SWEEP run.progress=plain \
  > "$OUT/sweep.log" 2>&1
echo "== sweep rc=$? ${SECONDS}s"
python3 scripts/compare.py $SWEEP > /dev/null 2>&1 || true
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
cat "$OUT/comparison.md" 2>/dev/null || tail -n 30 "$OUT/sweep.log"

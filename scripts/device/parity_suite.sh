#!/usr/bin/env bash
# One device call: learning parity of eager / compile / cudagraph through the runner at the
# bench_h200 setting (256 envs on the 16 cores, batch 256, u2), 5 seeds each, N iterations.
#   bash scripts/device/parity_suite.sh [deadline_s] [iterations]
source scripts/device/setup.sh
DEADLINE=${1:-470}; ITERS=${2:-300}
P=/tmp/parity
timeout -s TERM -k 20 "$DEADLINE" python3 scripts/learning_parity.py --preset bench_h200 \
  --paths eager,compile,cudagraph --seeds 1,2,3,4,5 --iterations "$ITERS" \
  --override run.summary_last=150 --override run.log_every=10 --override run.progress=plain \
  --out $P > "$OUT/parity.log" 2>&1
echo "== parity rc=$? ${SECONDS}s"
grep -E "done in|Error" "$OUT/parity.log" | tail -n 16
if [ ! -f $P/parity.json ]; then  # cut by the deadline: analyse the runs that finished
  python3 scripts/learning_parity.py --analyze $P/runs/* --out $P >> "$OUT/parity.log" 2>&1
fi
cp $P/parity.json $P/parity.md $P/parity.png "$OUT/" 2>/dev/null
sed -n '/verdict/p;/Final values/,/Permutation/p;/Speed/,$p' $P/parity.md

#!/usr/bin/env bash
# One device call: GPU numerics (bf16, burn-in + lockstep), then the real-training four-way
# sweep through the runner (256 envs on the machine's CPU cores, batch 256, 1000 iterations).
#   bash scripts/device/history/training_suite.sh [deadline_s]
source scripts/device/setup.sh
DEADLINE=${1:-560}
python3 scripts/validate_numerics.py --device cuda --dtype bfloat16 --paths eager,compile,cudagraph \
  --updates 2,8 --batch-size 256 --iterations 10 --output "$OUT/numerics_bf16.json" \
  > "$OUT/numerics_bf16.log" 2>&1
echo "== numerics rc=$? ${SECONDS}s"; grep -v -i warn "$OUT/numerics_bf16.log" | tail -n 8
bash scripts/device/history/sweep_only.sh $((DEADLINE - SECONDS))

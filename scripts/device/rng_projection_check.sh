#!/usr/bin/env bash
# One short device call (issue 5): the compiled RNG hash (path.compile_rng) and the row-factor
# projection on the H200. Everything goes to $OUT/check.log as it happens (a cut call keeps it):
#   1. compiled-hash bits == eager bits on CUDA; 2. learner cycle B=256 u8 cudagraph;
#   3. bf16 numerics u8 (same sampled rows and noise on every path, compile == cudagraph,
#      accuracy vs the fp32 oracle); 4. learner cycle B=2048 u8 cudagraph.
#   bash scripts/device/rng_projection_check.sh
source scripts/device/setup.sh
exec > >(tee -a "$OUT/check.log") 2>&1
python3 - <<'PY'
import torch
from flashsac_bench.learner.rng import CounterRNG
e, c = CounterRNG(5, "cuda"), CounterRNG(5, "cuda")
c.compile_hash()
cases = [(1, 8192), (2, 1), (101, 7424), (3, 2048 * 29), (102, 1)]
print("compiled hash bits == eager on CUDA:", all(torch.equal(c._bits(*x), e._bits(*x)) for x in cases))
PY
for b in 256; do
  python3 scripts/bench_learner.py --device cuda --dtype bfloat16 --batch-sizes $b --updates 8 \
    --paths cudagraph --output $OUT/learner_b$b.json 2>&1 | grep -E "median|^ *[0-9]"
done
python3 scripts/validate_numerics.py --device cuda --dtype bfloat16 --paths eager,compile,cudagraph \
  --updates 8 --batch-size 256 --iterations 10 --output $OUT/numerics_u8.json 2>&1 \
  | grep -E "NUMERICS|FAIL|checks:" | tail -n 10
python3 scripts/bench_learner.py --device cuda --dtype bfloat16 --batch-sizes 2048 --updates 8 \
  --paths cudagraph --output $OUT/learner_b2048.json 2>&1 | grep -E "median|^ *[0-9]"

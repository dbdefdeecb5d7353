#!/usr/bin/env bash
# One device call (issue 5, ~6 min): the two opt-in learner levers on the H200 --
# path.compile_rng (the counter RNG's integer hash compiled) and path.projection_gather (the
# projection as one gathered row-factor product). Everything goes to $OUT/check.log as it
# happens (a cut call keeps what finished):
#   1. compiled-hash bits == eager bits on CUDA;
#   2. bf16 numerics with both on (same sampled rows and noise on every path, compile ==
#      cudagraph, accuracy vs the fp32 oracle);
#   3. learner cycle, cudagraph u8, B=256 and 2048: defaults / each lever / both, side by side;
#   4. kernel profile of the B=256 u8 cycle with both.
#   bash scripts/device/rng_projection_check.sh
source scripts/device/setup.sh
exec > >(tee -a "$OUT/check.log") 2>&1
BOTH=compile_rng=true,projection_gather=true
python3 - <<'PY'
import torch
from flashsac_bench.learner.rng import CounterRNG
e, c = CounterRNG(5, "cuda"), CounterRNG(5, "cuda")
c.compile_hash()
cases = [(1, 8192), (2, 1), (101, 7424), (3, 2048 * 29), (102, 1)]
print("compiled hash bits == eager on CUDA:", all(torch.equal(c._bits(*x), e._bits(*x)) for x in cases))
PY
python3 scripts/validate_numerics.py --device cuda --dtype bfloat16 --paths eager,compile,cudagraph \
  --updates 2,8 --batch-size 256 --iterations 10 --path-options $BOTH \
  --output $OUT/numerics_levers.json 2>&1 | grep -E "NUMERICS|FAIL|checks:"
python3 scripts/bench_learner.py --device cuda --dtype bfloat16 --batch-sizes 256,2048 --updates 8 \
  --paths cudagraph --path-variants "base;compile_rng=true;projection_gather=true;$BOTH" \
  --output $OUT/learner_levers.json 2>&1 | grep -vi warn
python3 scripts/profile_cycle.py --batch-size 256 --updates 8 --path cudagraph --path-options $BOTH \
  --output $OUT/profile_levers.json 2>&1 | grep -vi warn | head -n 20

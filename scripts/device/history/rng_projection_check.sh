#!/usr/bin/env bash
# One device call (issue 5, <= 10 min): the two opt-in learner levers on the H200 --
# path.compile_rng (the counter RNG's integer hash compiled) and path.projection_gather (the
# projection as one gathered row-factor product) -- and the GPU tests with gemm_align 8.
# Everything goes to $OUT/check.log as it happens (a cut call keeps what finished); run
# directories are packed into $OUT/runs.tgz at the end.
#   1. compiled-hash bits == eager bits on CUDA;
#   2. bf16 numerics with both levers (same sampled rows and noise on every path, compile ==
#      cudagraph, accuracy vs the fp32 oracle);
#   3. learner cycle, cudagraph u8, B=256 and 2048: defaults / each lever / both, side by side;
#   4. real training, u2 cudagraph, 600 iterations: compile_rng off / on in one process (the
#      act's hash kernels are on the iteration's serial path);
#   5. kernel profile of the B=256 u8 cycle with both; 6. the GPU tests (defaults).
#   bash scripts/device/history/rng_projection_check.sh [deadline_s]
source scripts/device/setup.sh
exec > >(tee -a "$OUT/check.log") 2>&1
DEADLINE=${1:-580}
W=/tmp/levers; mkdir -p $W
BOTH=compile_rng=true,projection_gather=true
left() { echo $((DEADLINE - SECONDS)); }
step() {  # step NAME NEED_S CMD...: run if NEED_S seconds are left, bounded by the deadline
  local name=$1 need=$2; shift 2
  if [ "$(left)" -lt "$need" ]; then echo "== $name skipped (${SECONDS}s)"; return; fi
  timeout -s TERM -k 10 $(($(left) - 10)) "$@" > $W/$name.log 2>&1
  echo "== $name rc=$? ${SECONDS}s"
}
python3 - <<'PY'
import torch
from flashsac_bench.learner.rng import CounterRNG
e, c = CounterRNG(5, "cuda"), CounterRNG(5, "cuda")
c.compile_hash()
cases = [(1, 8192), (2, 1), (101, 7424), (3, 2048 * 29), (102, 1)]
print("compiled hash bits == eager on CUDA:", all(torch.equal(c._bits(*x), e._bits(*x)) for x in cases))
PY
step numerics 120 python3 scripts/validate_numerics.py --device cuda --dtype bfloat16 \
  --paths eager,compile,cudagraph --updates 2,8 --batch-size 256 --iterations 10 \
  --path-options $BOTH --output $OUT/numerics_levers.json
grep -h -E "NUMERICS|FAIL|checks:" $W/numerics.log
step bench 200 python3 scripts/bench_learner.py --device cuda --dtype bfloat16 \
  --batch-sizes 256,2048 --updates 8 --paths cudagraph \
  --path-variants "base;compile_rng=true;projection_gather=true;$BOTH" \
  --output $OUT/learner_levers.json
grep -v -i warn $W/bench.log | tail -n 14
step train 90 python3 -m flashsac_bench -m +experiment=bench_h200 update=u2 path=cudagraph \
  path.compile_rng=false,true run.iterations=600 run.progress=plain hydra.sweep.dir=$W/train
python3 - $W <<'PY'
import glob, json, sys
for p in sorted(glob.glob(f"{sys.argv[1]}/train/*/summary.json")):
    s = json.load(open(p))
    x, med = s["extra_timings"], lambda d: d["median"] and round(d["median"], 3)
    print(p.split("/")[-2], "compile_rng", s["config"]["path"]["compile_rng"], s["status"],
          {k: med(s[k]) for k in ("learner_train_ms", "collector_cycle_ms", "iter_ms")},
          {k: med(x[k]) for k in ("action_ms", "insert_ms", "bookkeeping_ms")},
          "overlap", round(s["overlap_efficiency"], 3))
PY
step profile 60 python3 scripts/profile_cycle.py --batch-size 256 --updates 8 --path cudagraph \
  --path-options $BOTH --output $OUT/profile_levers.json
grep -v -i warn $W/profile.log | head -n 12
step gpu_tests 120 python3 -m pytest -q -p no:cacheprovider tests/learner/test_gpu_paths.py \
  tests/runner/test_runner_gpu.py
tail -n 3 $W/gpu_tests.log
find $W -name "*.pt" -delete
tar czf $OUT/runs.tgz -C $W .

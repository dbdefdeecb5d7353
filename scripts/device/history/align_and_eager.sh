#!/usr/bin/env bash
# One device call (issue 5), packed into $OUT/align_and_eager.tgz, in order of priority:
#   1. the u8 eager row of the real-training protocol (256 envs, B=256, 1000 iterations), alone,
#      with hardware.gemm_align=1 like the other rows of that table (measured at 7e940f2);
#   2. bf16 numerics of the fast paths with the padded GEMMs (gemm_align 8, the CUDA default);
#   3. learner-only A/B of gemm_align 1 vs 8 (cudagraph, u8, B=256/2048) side by side with
#      unilab-rl in one process; 4. the kernel profile of the padded B=256 u8 cycle.
#   bash scripts/device/history/align_and_eager.sh [deadline_s]
source scripts/device/setup.sh
DEADLINE=${1:-570}
W=/tmp/work; mkdir -p $W/logs
left() { echo $((DEADLINE - SECONDS)); }
step() {  # step NAME NEED_S CMD...: run if NEED_S seconds are left, bounded by the deadline
  local name=$1 need=$2; shift 2
  if [ "$(left)" -lt "$need" ]; then echo "== $name skipped (${SECONDS}s)"; return; fi
  timeout -s TERM -k 15 $(($(left) - 10)) "$@" > $W/logs/$name.log 2>&1
  echo "== $name rc=$? ${SECONDS}s"
}
step u8_eager 200 python3 -m flashsac_bench +experiment=bench_h200 update=u8 path=eager \
  hardware.gemm_align=1 run.progress=plain hydra.run.dir=$W/sweep_u8/eager
python3 - $W <<'PY'
import glob, json, sys
for p in sorted(glob.glob(f"{sys.argv[1]}/sweep_u8/*/summary.json")):
    s = json.load(open(p))
    med = {k: s[k]["median"] for k in ("learner_train_ms", "collector_cycle_ms", "iter_ms")}
    print(p, s["status"], s["iterations_done"], {k: v and round(v, 2) for k, v in med.items()},
          "overlap", s["overlap_efficiency"] and round(s["overlap_efficiency"], 3))
PY
step numerics 60 python3 scripts/validate_numerics.py --device cuda --dtype bfloat16 \
  --paths eager,compile,cudagraph --updates 2,8 --batch-size 256 --iterations 10 \
  --output $W/numerics_bf16_align8.json
grep -h -E "NUMERICS|FAIL" $W/logs/numerics.log | tail -n 8
step bench 60 python3 scripts/bench_learner.py --device cuda --dtype bfloat16 \
  --batch-sizes 256,2048 --updates 8 --paths cudagraph --gemm-align 1,8 \
  --reference unilab-rl --reference-configs 256x8,2048x8 --output $W/learner_align.json
tail -n 8 $W/logs/bench.log
step profile 45 python3 scripts/profile_cycle.py --batch-size 256 --updates 8 --path cudagraph \
  --gemm-align 8 --output $W/profile_align8.json
tail -n 30 $W/logs/profile.log
find $W -name "*.pt" -delete
tar czf $OUT/align_and_eager.tgz -C $W .

#!/usr/bin/env bash
# One device call (issue 13; <= 10 min): Inductor's Triton GEMM templates on the captured cycle
# (path.inductor_options.max_autotune_gemm), which inductor_levers.sh could not time: its
# autotuning (35-108 s per GEMM shape at 2 compile threads beside 13 other jobs) outlasted the
# call. Here it compiles ALONE with every core, then is timed beside the defaults.
#   A. alone: compile + autotune B=256 u8 (458 s in machine start J; B=2048 u8 only if time
#      is left) into the cache;
#   B. alone, on the warm cache: base vs max_autotune_gemm, one process, unilab-rl beside;
#      a kernel profile of the winner's cycle.
# Needs .whl/ (setup.sh) with unilab-rl 1.4.15 for the side-by-side.
#   FLASHSAC_BENCH_COMMIT=<commit> bash scripts/device/gemm_autotune.sh [deadline_s]
source scripts/device/setup.sh
source scripts/device/lib.sh
learner_suite gemm_autotune "${1:-560}"
echo "commit ${FLASHSAC_BENCH_COMMIT:-unknown}"
GEMM="inductor_options.max_autotune_gemm=true"
export TORCHINDUCTOR_COMPILE_THREADS=16  # the autotune's precompiles dominate its time
for b in 256 2048; do  # the time left decides whether B=2048 is compiled and timed
  step warm_$b 240 $BENCH --batch-sizes $b --updates 8 --paths cudagraph --path-variants \
    "base;$GEMM" --cycles 2 --warmup 1 --output $W/warm/b$b.json || break  # uncompiled: no timing
  tail -n 3 $W/logs/warm_$b.log
  step time_$b 60 $BENCH --batch-sizes $b --updates 8 --paths cudagraph --path-variants \
    "base;$GEMM" --reference unilab-rl --reference-configs ${b}x8 --output $W/rows/b$b.json
done
step profile 45 python3 scripts/profile_cycle.py --batch-size 256 --updates 8 --path cudagraph \
  --path-options "$GEMM" --top 25 --output $OUT/profile_b256_u8_gemm.json

echo; echo "== learner rows (median ms)"
python3 scripts/device/rows_summary.py $OUT/h200_learner_gemm.json $W/rows/b256.json \
  $W/rows/b2048.json
grep -h -E "^AUTOTUNE|^  (bmm|mm|addmm) " $W/logs/warm_256.log | head -n 40  # cuBLAS's times
grep -h -A14 "kernels/cycle" $W/logs/profile.log | head -n 15
find $W -name "*.pt" -delete
tar czf $OUT/gemm_autotune.tgz -C $W . 2>/dev/null
echo "== done at ${SECONDS}s"

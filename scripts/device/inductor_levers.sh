#!/usr/bin/env bash
# One device call (issue 13; <= 10 min): Inductor's own levers on the captured cycle, measured
# side by side with aligned_layout and the fused optimizer tail, and the GPU tests in the order
# that faulted in machine start H (runner file first).
#   A. in parallel, timings irrelevant: compile every variant (2 cycles each) into ONE shared
#      Inductor/Triton cache (autotuning variants pick their kernels here, beside the other
#      jobs), and the GPU tests.
#   B. alone, on the warm cache: the B=256 u8 lever table with unilab-rl in the same process,
#      B=2048 u8 for the GEMM-side variants, then kernel profiles.
# Needs .whl/ (setup.sh) with unilab-rl 1.4.15 for the side-by-side.
#   FLASHSAC_BENCH_COMMIT=<commit> bash scripts/device/inductor_levers.sh [deadline_s]
source scripts/device/setup.sh
source scripts/device/lib.sh
learner_suite inductor_levers "${1:-560}"
echo "commit ${FLASHSAC_BENCH_COMMIT:-unknown}"
# Which of the options exist in this torch (an unknown one fails its variant, not the call).
python3 - <<'EOF'
import torch._inductor.config as c
for k in ("aggressive_fusion", "combo_kernel_allow_mixed_sizes", "benchmark_combo_kernel",
          "coordinate_descent_tuning", "max_autotune_gemm", "max_autotune_pointwise",
          "split_reductions", "max_autotune_gemm_backends"):
    print(k, getattr(c, k, "MISSING"))
EOF
IO=inductor_options
GEMM="$IO.max_autotune_gemm=true"
TRITON_GEMM="$GEMM,$IO.max_autotune_gemm_backends=\"TRITON\""
VARIANTS=("aligned_layout=true" "$IO.aggressive_fusion=true"
  "$IO.combo_kernel_allow_mixed_sizes=2" "$IO.benchmark_combo_kernel=true"
  "$IO.coordinate_descent_tuning=true" "$GEMM" "$TRITON_GEMM" "$IO.max_autotune_pointwise=true"
  "$IO.split_reductions=false" "fused_optimizer=true"
  "fused_optimizer=true,fused_optimizer_in_graph=true")
ALL="base$(printf ';%s' "${VARIANTS[@]}")"
C256="--batch-sizes 256 --updates 8 --paths cudagraph"
C2048="--batch-sizes 2048 --updates 8 --paths cudagraph"
BIG="base;aligned_layout=true;$GEMM;$TRITON_GEMM"
WARM_LIMIT=260
# ---- A. compile everything + the GPU tests (parallel) ------------------------------------------
warm base $C256 --reference unilab-rl --reference-configs 256x8
for i in "${!VARIANTS[@]}"; do warm v$i $C256 --path-variants "${VARIANTS[$i]}"; done
warm big $C2048 --path-variants "$BIG" --reference unilab-rl --reference-configs 2048x8
bg gpu_tests 330 python3 -m pytest -q -p no:cacheprovider tests/runner/test_runner_gpu.py \
  tests/learner/test_gpu_paths.py
wait "${PIDS[@]}"
echo "---- phase A done at ${SECONDS}s"
tail -n 3 $W/logs/gpu_tests.log
grep -h -E "FAILED|Error" $W/logs/warm_*.log | head -n 12

# ---- B. timing, alone ---------------------------------------------------------------------------
step levers 100 $BENCH $C256 --path-variants "$ALL" --reference unilab-rl \
  --reference-configs 256x8 --output $W/rows/levers.json
step big 60 $BENCH $C2048 --path-variants "$BIG" --reference unilab-rl \
  --reference-configs 2048x8 --output $W/rows/big.json
step profile_fused 45 python3 scripts/profile_cycle.py --batch-size 256 --updates 8 \
  --path cudagraph --path-options fused_optimizer=true,fused_optimizer_in_graph=true --top 25 \
  --output $OUT/profile_b256_u8_fused_in_graph.json
step profile_gemm 45 python3 scripts/profile_cycle.py --batch-size 256 --updates 8 \
  --path cudagraph --path-options "$GEMM" --top 25 --output $OUT/profile_b256_u8_gemm.json

# ---- summary ------------------------------------------------------------------------------------
echo; echo "== learner rows (median ms)"
python3 scripts/device/rows_summary.py $OUT/h200_learner_inductor.json $W/rows/levers.json \
  $W/rows/big.json
grep -h -A12 "configuration(s) failed" $W/logs/levers.log $W/logs/big.log 2>/dev/null
for p in fused gemm; do
  echo "== profile $p"; grep -h -A14 "kernels/cycle" $W/logs/profile_$p.log | head -n 15
done
find $W -name "*.pt" -delete
tar czf $OUT/inductor_levers.tgz -C $W . 2>/dev/null
echo "== done at ${SECONDS}s"

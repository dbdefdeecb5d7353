#!/usr/bin/env bash
# Root-causing the GPU faults of issue 52 (delete this folder once they are): in one device call,
#   a. torch's own cuBLAS-workspace / graph-pool sequences (probes.py), one process each;
#   b. the dropped-graph test's sequence (dropped.py) in variants, each its own process, with
#      CUDA_LAUNCH_BLOCKING=1 (the faulting launch in the traceback), on BASE_TREE (the code
#      before the fix: here, `mkdir -p .diag/base && git archive <commit> flashsac_bench lab
#      tests conf pyproject.toml | tar -x -C .diag/base && ln -s ../conf
#      .diag/base/flashsac_bench/conf`, carried as .diag) and under compute-sanitizer;
#   c. the no-hidden-sync test on BASE_TREE with its full traceback (which operation syncs);
#   d. with WARP=1 (warp installed: scripts/device/warp_carry.sh), where the captured Warp step
#      departs from the eager one in deterministic mode (warp_det.py).
#   BASE_TREE=.diag/base bash scripts/device/diagnose/run.sh   -> $OUT/diagnose.tgz
source scripts/device/setup.sh
export TORCHINDUCTOR_CACHE_DIR=/tmp/ind TRITON_CACHE_DIR=/tmp/tri
D=scripts/device/diagnose L=/tmp/diagnose; mkdir -p $L; B=$(realpath "${BASE_TREE:-.}")
for p in stream_pool destroy_sibling clear_after_capture eager_ws_then_capture_then_clear; do
  timeout 60 python3 $D/probes.py $p > $L/probe_$p.log 2>&1; tail -n 1 $L/probe_$p.log; done
for v in base comp_eager no_trees clear_before_capture clear_only collect_first; do
  CUDA_LAUNCH_BLOCKING=1 timeout 400 python3 $D/dropped.py $v "$B" > $L/dropped_$v.log 2>&1 & done
timeout 400 compute-sanitizer --tool memcheck --print-limit 20 python3 $D/dropped.py base "$B" \
  > $L/sanitizer_dropped.log 2>&1 &
(cd "$B" && PYTHONPATH=/tmp/site:$B timeout 400 python3 -m pytest -q -p no:cacheprovider \
  tests/runner/test_runner_gpu.py -k hidden_sync --tb=long > $L/sync.log 2>&1) &
[ "${WARP:-0}" = 1 ] && timeout 400 python3 $D/warp_det.py > $L/warp_det.log 2>&1
wait
grep -h "RESULT\|PROBE\|WARP " $L/*.log; tail -n 1 $L/sync.log; grep "ERROR SUMMARY" $L/sanitizer_dropped.log
tar czf $OUT/diagnose.tgz -C $L .

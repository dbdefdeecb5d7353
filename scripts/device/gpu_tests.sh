#!/usr/bin/env bash
# One device call (<= 10 min): the GPU tests, four ways at once.
#   a. this tree, runner file first then learner file, in ONE process (graphs of one test must
#      not break another's: learner/graphs.py);
#   b. this tree, each file alone in its own process;
#   c. BASE_TREE (optional: an export of another commit, `git archive <commit> | tar -x -C DIR`)
#      in the one-process order, to tell a change's effect from the order fault.
# If (a) fails, the same order again with CUBLAS_WORKSPACE_CONFIG=:0:0 for comparison.
#   FLASHSAC_BENCH_COMMIT=<commit> [BASE_TREE=DIR] bash scripts/device/gpu_tests.sh [deadline_s]
source scripts/device/setup.sh
source scripts/device/lib.sh
learner_suite gpu_tests "${1:-540}"
echo "commit ${FLASHSAC_BENCH_COMMIT:-unknown}"
RUNNER=tests/runner/test_runner_gpu.py LEARNER=tests/learner/test_gpu_paths.py
run_tests() {  # run_tests NAME DIR FILES...: pytest in DIR, in the background (lib.sh's bg)
  local name=$1 dir=$2; shift 2
  bg $name $(($(left) - 20)) env -C "$dir" TORCHINDUCTOR_COMPILE_THREADS=4 \
    PYTHONPATH=$dir${PYTHONPATH:+:$PYTHONPATH} python3 -m pytest -q -p no:cacheprovider "$@"
}
run_tests one_process "$PWD" $RUNNER $LEARNER
run_tests learner_alone "$PWD" $LEARNER
run_tests runner_alone "$PWD" $RUNNER
if [ -n "${BASE_TREE:-}" ]; then
  run_tests base_one_process "$BASE_TREE" $RUNNER $LEARNER
fi
wait "${PIDS[@]}"  # not a bare wait: that also waits for learner_suite's tee, forever
if grep -q -E "failed|error" $W/logs/one_process.log && [ "$(left)" -gt 200 ]; then
  export CUBLAS_WORKSPACE_CONFIG=:0:0
  run_tests one_process_ws0 "$PWD" $RUNNER $LEARNER
  wait "${PIDS[-1]}"
fi
echo; echo "== results"; tail -n 1 $W/logs/*.log
echo; echo "== failures"
grep -h -E "^(FAILED|ERROR)|^E  .{0,160}$" $W/logs/*.log | sort | uniq -c | head -n 40
tar czf $OUT/gpu_tests.tgz -C $W .
echo "== done at ${SECONDS}s"

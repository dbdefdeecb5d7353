#!/usr/bin/env bash
# One device call: the checks a default change needs, then the training loop's host side at
# g1_walk_h200's 1024 envs, A/B in one machine start.
#   FLASHSAC_BENCH_COMMIT=<commit> bash scripts/device/host_checks.sh [DEADLINE_S]
# 0. a worker's host work per step (physics stubbed, seconds);
# 1. the learner cycle's bits across processes (validate_determinism, B=2048 u16, twice);
# 2. 1000 replays of the captured B=2048 u8 cycle with path.aligned_layout; the GPU tests;
# 3. g1_walk_h200 for AB_ITERS iterations with a checkpoint every AB_EVERY, per variant
#    (AB="name:overrides,... ..."; default: 15 vs 16 workers, inline vs background checkpoints,
#    the env tick on the collector thread vs the main thread): iteration / env-step medians,
#    the iteration's host parts, the checkpoints' stall.
#    Variants named base_* import flashsac_bench from $BASELINE (an export of an older commit's
#    package, `git archive <commit> flashsac_bench | tar -x -C DIR`): old and new code A/B in
#    one machine start.
# NO_DET=1 / NO_REPLAY=1 / NO_GPU_TESTS=1 skip steps 1 / 2 / the GPU tests.
# Results: $OUT/host_checks.log, $OUT/host_checks.tgz (summaries, no checkpoints).
source scripts/device/setup.sh
source scripts/device/lib.sh
learner_suite host_checks "${1:-400}"  # log to $OUT, deadline, work dir W, shared caches
mkdir -p $W/ab
echo "commit ${FLASHSAC_BENCH_COMMIT:-unknown}"
# 0. A worker shard's host work per step and per 2-env reset on these cores (physics stubbed;
#    seconds): how much of the walk's env step the numpy side is (docs/benchmarks.md).
timeout 60 python3 scripts/bench_shard_host.py --num-envs 34 68 --rounds 10 \
  --json $W/shard_host.json > $W/logs/shard_host.log 2>&1
echo "== shard host rc=$? (${SECONDS}s)"; cat $W/logs/shard_host.log
# 1. Do two processes compute the same cycle? If not, again with Inductor's deterministic mode
#    (no per-process autotuning of reduction configs, whose near-tied winners can differ in
#    their summation order: pytorch/pytorch#189121, a candidate for the walk's run-to-run
#    difference, docs/benchmarks.md).
det_pair() {  # det_pair NAME [validate_determinism options...]
  local name=$1; shift
  local det="python3 scripts/validate_determinism.py --device cuda --dtype bfloat16 \
    --batch-size 2048 --updates 16 --paths ${DET_PATHS:-eager,cudagraph} --cycles 3"
  timeout 150 $det "$@" --output $W/${name}_a.json > $W/logs/${name}_a.log 2>&1
  echo "== $name a rc=$? (${SECONDS}s)"; tail -n 6 $W/logs/${name}_a.log
  timeout 150 $det "$@" --compare $W/${name}_a.json --output $W/${name}_b.json \
    > $W/logs/${name}_b.log 2>&1
  local rc=$?; echo "== $name b rc=$rc (${SECONDS}s)"; tail -n 8 $W/logs/${name}_b.log
  return $rc
}
if [ "$(left)" -gt 300 ] && [ -z "${NO_DET:-}" ]; then
  det_pair det || { [ "$(left)" -gt 300 ] &&
    det_pair det_inductor_deterministic --path-options 'inductor_options={"deterministic":true}'; }
fi
# 2. path.aligned_layout (off by default until this and a walk pass): 1000 replays.
if [ "$(left)" -gt 240 ] && [ -z "${NO_REPLAY:-}" ]; then
  timeout 120 python3 scripts/validate_replay_stability.py --replays 1000 --batch-size 2048 \
    --updates 8 --path-options aligned_layout=true --output $W/replay_b2048_u8_aligned.json \
    > $W/logs/replay.log 2>&1
  echo "== replay (aligned_layout) rc=$? (${SECONDS}s)"; tail -n 4 $W/logs/replay.log
fi
if [ "$(left)" -gt 200 ] && [ -z "${NO_GPU_TESTS:-}" ]; then
  for f in tests/learner/test_gpu_paths.py tests/runner/test_runner_gpu.py; do  # a process each (one for both passes too: gpu_tests.sh)
    timeout 150 python3 -m pytest -q -p no:cacheprovider $f >> $W/logs/gpu_tests.log 2>&1
    echo "== gpu tests $f rc=$? (${SECONDS}s)"; tail -n 1 $W/logs/gpu_tests.log
  done
fi
# PROBE=N: MuJoCo alone at N envs in 15 and 16 worker processes (the bare env and its ceiling).
if [ -n "${PROBE:-}" ] && [ "$(left)" -gt 120 ]; then
  timeout 100 python3 scripts/bench_env.py --num-envs $PROBE --workers 15 16 --ceiling \
    --steps 200 --repeats 3 --deadline 60 > $W/logs/probe.log 2>&1
  echo "== env probe rc=$? (${SECONDS}s)"; tail -n 6 $W/logs/probe.log
fi
ab_run() {  # ab_run NAME OVERRIDES...
  local name=$1 path=$PYTHONPATH; shift
  if [[ $name == base_* ]]; then
    [ -e "$BASELINE/flashsac_bench/conf" ] || ln -s "$PWD/conf" "$BASELINE/flashsac_bench/conf"
    path=$BASELINE:$PYTHONPATH
  fi
  PYTHONPATH=$path timeout 150 python3 -m flashsac_bench +experiment=g1_walk_h200 hydra.run.dir=$W/ab/$name \
    run.progress=plain run.iterations=${AB_ITERS:-600} run.checkpoint_every=${AB_EVERY:-200} \
    "$@" > $W/logs/ab_$name.log 2>&1
  echo "== $name rc=$? (${SECONDS}s)"
}
# the first run compiles the walk's cycle into the cache: not compared
[ "$(left)" -gt 60 ] && ab_run warm run.iterations=1 run.checkpoint_every=0
for item in ${AB:-"w15_bg:backend.workers=15 w16_bg:backend.workers=16 w15_inline_ckpt:backend.workers=15,run.background_checkpoints=false w15_main_tick:backend.workers=15,run.collector_thread=false w16_bg2:backend.workers=16 w15_bg2:backend.workers=15 w15_main_tick2:backend.workers=15,run.collector_thread=false"}; do
  name=${item%%:*}; overrides=${item#*:}
  if [ "$(left)" -lt 45 ]; then echo "skip $name: $(left) s left"; continue; fi
  ab_run $name ${overrides//,/ }
done
python3 - $W/ab/*/summary.json <<'PY'
import json, statistics as st, sys
def med(rows, key):
    vals = [r[key] for r in rows if r.get(key) is not None]
    return st.median(vals) if vals else float("nan")
# pack: collector_cycle - env_step (with split-step packing, only the serial rest of it);
# beyond env: iteration - env_step, all the iteration's host work on the serial path.
# period: time_s differences, the loop's pace whatever iter_ms covers (since the deferred row,
# iter_ms leaves out the row's bookkeeping, done while the next tick steps; before, it did not).
print(f"{'run':<11} {'period':>6} {'iter med':>8} {'mean':>6} {'env':>6} {'beyond':>6} {'pack':>5} {'act':>5} "
      f"{'rel':>5} {'start':>5} {'join':>5} {'book':>5} {'strag':>5} {'loop s':>6}  "
      "checkpoints (iteration: blocking s / s)")
for f in sys.argv[1:]:
    s = json.load(open(f)); rows = [r for r in s["rows_all"] if r.get("iter_ms") is not None]
    if len(rows) < 10: continue
    pack = st.median(r["collector_cycle_ms"] - r["env_step_ms"] for r in rows)
    ck = "  ".join(f"{c['iteration']}: {c['blocking_s']:.2f}/{c['s']:.2f}" for c in s["checkpoints"])
    beyond = st.median(r["iter_ms"] - r["env_step_ms"] for r in rows)
    t = [r["time_s"] for r in rows]
    period = st.median((b - a) * 1e3 for a, b in zip(t, t[1:]))
    print(f"{f.split('/')[-2]:<11} {period:6.2f} {med(rows, 'iter_ms'):8.2f} {st.mean(r['iter_ms'] for r in rows):6.2f} "
          f"{med(rows, 'env_step_ms'):6.2f} {beyond:6.2f} {pack:5.2f} {med(rows, 'action_ms'):5.2f} "
          f"{med(rows, 'release_ms'):5.2f} {med(rows, 'collector_start_ms'):5.2f} "
          f"{med(rows, 'join_ms'):5.2f} {med(rows, 'bookkeeping_ms'):5.2f} "
          f"{med(rows, 'straggler_ms'):5.2f} "
          f"{s['wall_s']:6.1f}  {ck}")
PY
find $W -name "*.pt" -path "*checkpoints*" -delete
cp $W/*.json $OUT/ 2>/dev/null
tar czf $OUT/host_checks.tgz -C $W .
echo "== done at ${SECONDS}s"

#!/usr/bin/env bash
# One device call (issue 13, <= 10 min): the learner, part two. Everything is logged to
# $OUT/part2.log as it happens (a cut call keeps what finished); the last lines are a summary.
#   A. correctness, four processes side by side (own Inductor/Triton caches, so no process
#      reads another's autotuning; timings do not matter here):
#      GPU tests of the learner (-m gpu: graph trees record once / never skip, fused tail,
#      cudagraph == compile); bf16 numerics vs the fp32 oracle with the defaults and with every
#      new option at once (fused_optimizer, inductor_cudagraphs, joint_critic_forward,
#      shared_input_stats); 1000-replay stability (defaults B=2048 u8, then fused_optimizer
#      B=256 u8);
#   B. alone on the GPU: learner cycle side by side, B=256 u2/u8 and B=2048 u8, compile and
#      cudagraph, defaults vs each new option vs Inductor graph trees on the compile path, with
#      unilab-rl; kernel profiles of the B=256 u8 cycle (defaults, fused_optimizer); then the
#      batch-size scaling table (u8, 256..8192) with whatever time is left.
# Needs .whl/ with hydra-core, omegaconf, antlr4-python3-runtime (config imports) and
# unilab-rl 1.4.15 (the reference); mujoco is not needed.
#   bash scripts/device/history/learner_part2.sh [deadline_s]
source scripts/device/setup.sh
exec > >(tee -a "$OUT/part2.log") 2>&1
DEADLINE=${1:-540}
W=/tmp/part2; mkdir -p $W/logs
NEW=joint_critic_forward=true,shared_input_stats=true
OPTS=fused_optimizer=true,inductor_cudagraphs=true,$NEW  # every new option at once
ALL=$OPTS,compile_rng=true,projection_gather=true  # ... and the two levers of issue 5
left() { echo $((DEADLINE - SECONDS)); }
dl() { local d=$(($(left) - $1)); echo $((d > 30 ? d : 30)); }  # seconds until RESERVE is left
cache() {  # cache NAME: this process's own Inductor / Triton caches
  export TORCHINDUCTOR_CACHE_DIR=/tmp/ind_$1 TRITON_CACHE_DIR=/tmp/tri_$1
}
bg() {  # bg NAME LIMIT_S CMD...: a phase-A job in the background, in its own caches
  local name=$1 limit=$2; shift 2
  ( cache "$name"; export TORCHINDUCTOR_COMPILE_THREADS=3
    timeout -s TERM -k 10 "$limit" "$@" > $W/logs/$name.log 2>&1
    echo "== $name rc=$? (at ${SECONDS}s)" ) &
  PIDS+=($!)
}
PIDS=()
step() {  # step NAME NEED_S CMD...: phase B, alone; run if NEED_S seconds are left
  local name=$1 need=$2; shift 2
  if [ "$(left)" -lt "$need" ]; then echo "== $name skipped (${SECONDS}s)"; return; fi
  timeout -s TERM -k 10 $(($(left) - 10)) "$@" > $W/logs/$name.log 2>&1
  echo "== $name rc=$? (at ${SECONDS}s)"
}

# ---- A. correctness (parallel) -------------------------------------------------------------
bg gpu_tests 230 python3 -m pytest -q -p no:cacheprovider -m gpu tests/learner
bg numerics 230 python3 scripts/validate_numerics.py --device cuda --dtype bfloat16 \
  --paths eager,compile,cudagraph --updates 2,8 --batch-size 256 --iterations 10 \
  --output $OUT/numerics_bf16.json
bg numerics_opts 230 python3 scripts/validate_numerics.py --device cuda --dtype bfloat16 \
  --paths eager,compile,cudagraph --updates 2,8 --batch-size 256 --iterations 10 \
  --path-options $OPTS --output $OUT/numerics_bf16_options.json
bg stability 230 bash -c "python3 scripts/validate_replay_stability.py --replays 1000 \
  --batch-size 2048 --updates 8 --output $OUT/replay_stability.json && \
  python3 scripts/validate_replay_stability.py --replays 1000 --batch-size 256 --updates 8 \
  --path-options fused_optimizer=true --output $W/replay_stability_fused.json"
wait "${PIDS[@]}"  # not a bare wait: that would also wait for the log's tee
echo "---- phase A done at ${SECONDS}s"
tail -n 3 $W/logs/gpu_tests.log
grep -h -E "vs|checks:|NUMERICS|error vs" $W/logs/numerics.log $W/logs/numerics_opts.log
grep -h -E "FAIL|REPLAY|Error" $W/logs/stability.log

# ---- B. timing, alone -------------------------------------------------------------------------
# The bench reuses the defaults' numerics cache (B=256 compiled there): warm base rows; the
# B=2048 base row's cold start is a cold compile.
cache numerics
V256="base;fused_optimizer=true;functional_steps=false;inductor_cudagraphs=true;$OPTS"
V256="$V256;$ALL;joint_critic_forward=true;shared_input_stats=true"
V256="$V256;functional_steps=false,inductor_cudagraphs=true"
bench() {  # bench NAME NEED_S RESERVE_S ARGS...: new configurations start until RESERVE_S is left
  local name=$1 need=$2 reserve=$3; shift 3
  step $name $need python3 scripts/bench_learner.py --device cuda --dtype bfloat16 \
    --paths compile,cudagraph --reference unilab-rl --deadline-s $(dl $reserve) "$@" \
    --output $W/$name.json
  grep -s -v -i warn $W/logs/$name.log | grep -E "^ *(ours|unilab)|failed|skipped|Error" | tail -n 24
}
bench bench256_u8 120 200 --batch-sizes 256 --updates 8 --path-variants "$V256" \
  --reference-configs 256x8
bench bench2048_u8 70 130 --batch-sizes 2048 --updates 8 --reference-configs 2048x8 \
  --path-variants "base;fused_optimizer=true;inductor_cudagraphs=true;$ALL"
bench bench256_u2 50 90 --batch-sizes 256 --updates 2 --reference-configs 256x2 \
  --path-variants "base;inductor_cudagraphs=true;$OPTS;$ALL"
python3 - $W $OUT/h200_learner_part2.json <<'PY'
import json, sys, pathlib
rows = []
for name in ("bench256_u8.json", "bench2048_u8.json", "bench256_u2.json"):
    p = pathlib.Path(sys.argv[1]) / name
    rows += json.loads(p.read_text()) if p.exists() else []
pathlib.Path(sys.argv[2]).write_text(json.dumps(rows, indent=2) + "\n")
PY
step profile 40 python3 scripts/profile_cycle.py --batch-size 256 --updates 8 --path cudagraph \
  --top 15 --output $OUT/profile_b256_u8.json
step profile_fused 40 python3 scripts/profile_cycle.py --batch-size 256 --updates 8 \
  --path cudagraph --top 15 --path-options fused_optimizer=true \
  --output $W/profile_b256_u8_fused.json
grep -s -h -E "^B=" $W/logs/profile.log $W/logs/profile_fused.log
step scaling 60 python3 scripts/bench_learner.py --device cuda --dtype bfloat16 --scaling \
  --cycles 30 --warmup 5 --deadline-s $(dl 60) \
  --output $OUT/h200_learner_scaling.json --plot $W/h200_learner_scaling.png
grep -s -v -i warn $W/logs/scaling.log | tail -n 8

# ---- summary -------------------------------------------------------------------------------
python3 scripts/device/history/part2_summary.py $W $OUT
tar czf $OUT/part2.tgz -C $W .
echo "== done at ${SECONDS}s"

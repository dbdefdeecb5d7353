# Shared pieces of the device suites (sourced after setup.sh; DEADLINE set by the caller).
left() { echo $((DEADLINE - SECONDS)); }

# Phase helpers of the learner suites (W: work dir, BENCH: the bench command, DEADLINE set).
learner_suite() {  # learner_suite NAME DEADLINE_S: what every learner suite starts with
  exec > >(tee -a "$OUT/$1.log") 2>&1  # the whole output also in $OUT/NAME.log
  DEADLINE=$2
  W=/tmp/$1/$(date +%H%M%S); mkdir -p $W/logs $W/warm $W/rows  # its own dir per call
  # one Inductor / Triton cache for every job: phase A compiles into it, phase B reads it
  export TORCHINDUCTOR_CACHE_DIR=/tmp/ind TRITON_CACHE_DIR=/tmp/tri
  BENCH="python3 scripts/bench_learner.py --device cuda --dtype bfloat16"
}
PIDS=()
bg() {  # bg NAME LIMIT_S CMD...: a job in the background, timings irrelevant (phase A)
  local name=$1 limit=$2; shift 2
  ( export TORCHINDUCTOR_COMPILE_THREADS=2
    timeout -s TERM -k 10 "$limit" "$@" > $W/logs/$name.log 2>&1
    echo "== $name rc=$? (at ${SECONDS}s)" ) &
  PIDS+=($!)
}
warm() {  # warm NAME ARGS...: compile ARGS' bench configurations (2 cycles each) into the cache
  local name=$1; shift
  bg "warm_$name" ${WARM_LIMIT:-200} $BENCH --cycles 2 --warmup 1 "$@" --output $W/warm/$name.json
}
step() {  # step NAME NEED_S CMD...: alone (phase B), only if NEED_S seconds are left
  local name=$1 need=$2; shift 2
  if [ "$(left)" -lt "$need" ]; then echo "== $name skipped at ${SECONDS}s"; return 1; fi
  timeout -s TERM -k 10 $(($(left) - 10)) "$@" > $W/logs/$name.log 2>&1
  echo "== $name rc=$? (at ${SECONDS}s)"
}

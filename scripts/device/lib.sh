# Shared pieces of the device suites (sourced after setup.sh; DEADLINE set by the caller).
left() { echo $((DEADLINE - SECONDS)); }

# sweep_rows UPDATE "path:need_s ..." [overrides...]: one bench_h200 training run per path into
# $W/sweep/<update>_<path>, each only if its rough need (setup + compile + 1000 iterations) still
# fits before the deadline.
sweep_rows() {
  local update=$1 plan=$2; shift 2
  for item in $plan; do
    local path=${item%%:*} need=${item##*:}
    if [ "$(left)" -lt "$need" ]; then echo "skip $update $path: $(left) s left"; continue; fi
    timeout $(( $(left) - 5 )) python3 -m flashsac_bench +experiment=bench_h200 update=$update \
      path=$path hydra.run.dir=$W/sweep/${update}_$path run.progress=plain "$@" \
      > $W/logs/${update}_$path.log 2>&1
    echo "$update $path rc=$? (at ${SECONDS}s)"; tail -n 1 $W/logs/${update}_$path.log
  done
}

# pack NAME: the comparison of the sweep rows into $OUT, then $W (no checkpoints or event
# files: they are large) as $OUT/NAME.tgz.
pack() {
  if [ -d $W/sweep ]; then
    python3 scripts/compare.py $W/sweep/* --out $W/sweep > $W/logs/compare.log 2>&1
    cp $W/sweep/comparison.md $W/sweep/comparison.csv $W/sweep/comparison.png $OUT/ 2>/dev/null
  fi
  find $W -name "*.pt" -path "*checkpoints*" -delete
  find $W -name "events.out.tfevents*" -delete
  tar czf $OUT/$1.tgz -C $W .
  echo "== done at ${SECONDS}s"
  cat $OUT/comparison.md 2>/dev/null
}

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

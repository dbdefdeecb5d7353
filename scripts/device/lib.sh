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

#!/usr/bin/env bash
# One device call (issue 5), packed into $OUT/training_rest.tgz:
#   1. side-by-side A/B in one process (u2 cudagraph, 600 iterations, stats over the last 500):
#      run.capture_device_steps (eager act/store vs CUDA graphs) x run.overlap_store (store at
#      the end of the iteration vs while the envs step);
#   2. the u8 rows of the real-training protocol with the current code, u8 eager (~6 min) last.
# With CHECKS=1 it first runs, alone, the GPU tests and the 1000-replay stability check.
#   [CHECKS=1] bash scripts/device/history/training_rest.sh [deadline_s] [u8 paths, default all three]
source scripts/device/setup.sh
DEADLINE=${1:-570}
U8_PATHS=${2:-cudagraph,compile,eager}
W=/tmp/work; mkdir -p $W/logs
left() { local s=$((DEADLINE - SECONDS)); echo $((s > 30 ? s : 30)); }
if [ "${CHECKS:-0}" = 1 ]; then
  timeout 240 python3 -m pytest -q -p no:cacheprovider tests/learner/test_gpu_paths.py \
    tests/runner/test_runner_gpu.py > $W/logs/gpu_tests.log 2>&1
  echo "== gpu tests rc=$? ${SECONDS}s: $(tail -n 1 $W/logs/gpu_tests.log)"
  timeout 150 python3 scripts/validate_replay_stability.py --replays 1000 --batch-size 2048 \
    --updates 8 --output $W/replay_stability.json > $W/logs/replay_stability.log 2>&1
  echo "== replay stability rc=$? ${SECONDS}s"; cat $W/logs/replay_stability.log | tail -n 12
fi
timeout -s TERM -k 15 $(left) python3 -m flashsac_bench -m +experiment=bench_h200 update=u2 \
  path=cudagraph run.capture_device_steps=false,true run.overlap_store=false,true \
  run.iterations=600 hydra.sweep.dir=$W/overlap_ab \
  run.progress=plain > $W/logs/overlap_ab.log 2>&1
echo "== overlap A/B rc=$? ${SECONDS}s"
timeout -s TERM -k 15 $(left) python3 -m flashsac_bench -m +experiment=bench_h200 update=u8 \
  path=$U8_PATHS hydra.sweep.dir=$W/sweep_u8 run.progress=plain \
  > $W/logs/sweep_u8.log 2>&1
echo "== u8 sweep rc=$? ${SECONDS}s"
python3 - $W <<'PY'
import glob, json, sys
for p in sorted(glob.glob(f"{sys.argv[1]}/*/*/summary.json")):
    s = json.load(open(p))
    tc = s["training_config"]
    med = {k: s[k]["median"] for k in ("learner_train_ms", "collector_cycle_ms", "iter_ms")}
    print(p.split("/")[-3], p.split("/")[-2], "graphs", tc.get("capture_device_steps"),
          "overlap_store", tc.get("overlap_store"),
          s["status"], s["iterations_done"], {k: v and round(v, 2) for k, v in med.items()},
          "overlap", s["overlap_efficiency"] and round(s["overlap_efficiency"], 3))
PY
find $W -name "*.pt" -delete
tar czf $OUT/training_rest.tgz -C $W .

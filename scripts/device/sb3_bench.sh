#!/usr/bin/env bash
# FlashSAC beside Stable-Baselines3's SAC on Gymnasium's MuJoCo suite (issue 49), on one GPU and
# its CPU cores: scripts/bench_sb3.py, every training in its own process, one at a time, inside
# the deadline (a cut call keeps every finished training, the runs.jsonl record of all, and the
# table and plot of what finished). Results in $OUT/sb3/ (the FlashSAC run dirs without their
# checkpoints), packed as $OUT/sb3.tgz; the table is printed last.
#   bash scripts/device/sb3_bench.sh check [DEADLINE_S]      # both learners, HalfCheetah-v5,
#        one seed, 50k env steps: the command and the wheels work here (~6-10 min)
#   bash scripts/device/sb3_bench.sh full DEADLINE_S [STEPS] ["ENVS"] ["SEEDS"]
#        the measure, default 1M steps, "HalfCheetah-v5 Humanoid-v5", "1 2 3": about
#        9-13 h for all 12 trainings (FlashSAC ~12 min a run, SB3's SAC ~1-2 h a run: one
#        gradient step per env step, one env), so DEADLINE_S ~ 46800; a shorter deadline runs
#        the first (env, seed) pairs whole and records the rest as skipped
# The lent machine's image lacks the benchmark's packages: carry their wheels in .whl/ beside
# setup.sh's (pip download --no-deps -d .whl gymnasium==1.4.0 farama-notifications==0.0.6
# stable-baselines3==2.9.0 cloudpickle imageio; pillow and typing-extensions if absent).
source scripts/device/setup.sh
source scripts/device/lib.sh
MODE=${1:-check}
case $MODE in
  check) DEADLINE=${2:-600}; STEPS=50000; ENVS="HalfCheetah-v5"; SEEDS="1"
         AT="10000 25000 50000" ;;
  full) DEADLINE=${2:?full needs a deadline in seconds}; STEPS=${3:-1000000}
        ENVS=${4:-"HalfCheetah-v5 Humanoid-v5"}; SEEDS=${5:-"1 2 3"}
        AT="100000 250000 500000 750000 $STEPS" ;;
  *) echo "sb3_bench.sh: check or full, not $MODE"; exit 2 ;;
esac
exec > >(tee -a "$OUT/sb3_bench.log") 2>&1
egl_rendering  # MUJOCO_GL for the evaluations' MuJoCo (disable where no EGL is here)
python3 -c "import gymnasium, gymnasium.envs.mujoco, stable_baselines3 as s; \
print('gymnasium', gymnasium.__version__, 'stable-baselines3', s.__version__)" \
  || { echo "sb3_bench.sh: gymnasium / stable-baselines3 missing: carry their wheels in .whl/"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "cores: $(nproc); mode $MODE, $STEPS steps, envs $ENVS, seeds $SEEDS, deadline ${DEADLINE}s"
# The benchmark's own deadline: what is left, less a minute to pack the results.
timeout -s TERM -k 60 $(($(left) - 30)) python3 scripts/bench_sb3.py --envs $ENVS \
  --seeds $SEEDS --steps $STEPS --at $AT --out $OUT/sb3 --deadline-s $(($(left) - 60)) \
  --run-limit-s ${RUN_LIMIT_S:-10800} > $OUT/sb3_run.log 2>&1
echo "== bench_sb3 rc=$? (at ${SECONDS}s)"
tar -czf $OUT/sb3.tgz -C $OUT sb3 2>/dev/null
tail -n 5 $OUT/sb3/runs/*/train.log 2>/dev/null | tail -n 40
echo "== runs"; cat $OUT/sb3/runs.jsonl 2>/dev/null | python3 -c "
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    print(r['name'], r['status'], round(r.get('wall_s') or 0), r.get('reason', '')[:120])"
echo "== table"; cat $OUT/sb3/sb3_comparison.md 2>/dev/null || echo "no table written"

#!/usr/bin/env bash
# backend=mjwarp's env throughput on a lent GPU, after `warp_carry.sh install` (Warp in
# /tmp/site); starts nothing that cannot finish before its deadline and keeps its rows under $OUT.
# The GPU tests, the loop, the setup, the sweep and the walk: scripts/device/warp_loop.sh.
#   bash scripts/device/warp_check.sh env [deadline]     env-steps/s: mjwarp (full task and its physics
#       ceiling) at 1024-16384 worlds, then the CPU backend's 1024-env row and its ceiling (15 workers)
source scripts/device/setup.sh
source scripts/device/lib.sh
WHAT=${1:-env}; DEADLINE=${2:-560}
W=/tmp/warp_check/$WHAT; mkdir -p $W/logs
exec > >(tee -a "$OUT/warp_$WHAT.log") 2>&1
python3 -c "import warp, mujoco_warp; print('warp', warp.__version__)" || exit 2

case $WHAT in
env)
  step mjwarp 120 python3 scripts/bench_env.py --backend mjwarp --warp-device cuda \
    --num-envs 1024 4096 8192 16384 --ceiling --steps 200 --repeats 3 \
    --deadline $(($(left) - 150)) --json $OUT/env_mjwarp.json
  tail -n 20 $W/logs/mjwarp.log
  step cpu 60 python3 scripts/bench_env.py --backend mujoco --num-envs 1024 --workers 15 \
    --ceiling --steps 200 --repeats 3 --deadline $(($(left) - 20)) --json $OUT/env_cpu.json
  tail -n 8 $W/logs/cpu.log
  ;;
*) echo "usage: bash scripts/device/warp_check.sh env [deadline]"; exit 2 ;;
esac

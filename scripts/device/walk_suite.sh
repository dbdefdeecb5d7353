#!/usr/bin/env bash
# One device call: train the walking G1 (+experiment=g1_walk_h200, cudagraph path) under a
# wall-clock limit (SIGTERM = stop after the current iteration, checkpoint, summary), then the
# deterministic evaluation with an EGL-rendered GIF + PNG strip, then time-to-threshold.
#   bash scripts/device/walk_suite.sh [train_s] [hydra overrides...]
# Needs the EGL loader debs in .gl/ (see /work/.library/device/README.md) and PyOpenGL in .whl/
# (MuJoCo's EGL backend imports it) for rendering.
source scripts/device/setup.sh
TRAIN_S=${1:-480}; shift || true
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export MUJOCO_GL=egl
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
RUN=/tmp/walk
timeout -s TERM "$TRAIN_S" python3 -m flashsac_bench +experiment=g1_walk_h200 \
  hydra.run.dir=$RUN run.progress=plain run.tensorboard=true "$@" > "$OUT/walk.log" 2>&1
echo "== train rc=$? ${SECONDS}s"
grep -E "iter [0-9]+/" "$OUT/walk.log" | awk 'NR % 25 == 0'
tail -n 3 "$OUT/walk.log"
timeout 150 python3 -m flashsac_bench.evaluate checkpoint=$RUN device=cuda episodes=16 \
  num_envs=16 > "$OUT/eval.log" 2>&1
echo "== eval rc=$? ${SECONDS}s"; tail -n 12 "$OUT/eval.log"
timeout 60 python3 -m flashsac_bench.export checkpoint=$RUN out_dir=/tmp/walk_export onnx=false \
  >> "$OUT/eval.log" 2>&1
echo "== export rc=$?"
cp $RUN/eval.json $RUN/eval.gif $RUN/eval_strip.png /tmp/walk_export/policy.torchscript.pt \
  "$OUT/" 2>/dev/null
timeout 60 python3 scripts/learning_parity.py --analyze $RUN --out /tmp/walk_an > /tmp/an.log 2>&1
cp /tmp/walk_an/parity.json "$OUT/walk_learning.json"; cp /tmp/walk_an/parity.png "$OUT/walk_curves.png"
sed -n '/Time to/,/Speed/p' /tmp/walk_an/parity.md

# Source at the start of every suite. On the lent H200 machine (its image has torch, triton,
# numpy, pandas, rich, tensorboard but no hydra/omegaconf/mujoco) it installs the wheels carried
# in .whl/ and puts the project on PYTHONPATH; on a machine of your own with the project
# installed (`pip install -e ".[dev]"`), .whl/ is absent or empty and nothing is installed.
set -u
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
  # Not pip-installed there: expose conf/ as the flashsac_bench.conf package, as the install does.
  [ -e flashsac_bench/conf ] || ln -s ../conf flashsac_bench/conf
fi
export PYTHONUNBUFFERED=1
# The lent machine's image sets PYTHONDONTWRITEBYTECODE=1 and torch's install has no bytecode
# cache, so every process would compile torch's sources anew on import, inflating each run's
# setup by seconds a normal pip install does not pay. Cache the bytecode in /tmp instead.
if [ -n "${PYTHONDONTWRITEBYTECODE:-}" ]; then
  unset PYTHONDONTWRITEBYTECODE
  export PYTHONPYCACHEPREFIX=/tmp/pycache
fi
export OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"

# egl_rendering: MuJoCo's offscreen rendering through EGL (evaluation GIFs). On the lent machine
# the GL loader debs carried in .gl/ are unpacked and EGL is pointed at the NVIDIA vendor file;
# elsewhere the system's own EGL is used as it is.
egl_rendering() {
  if compgen -G ".gl/*.deb" > /dev/null; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done 2>/dev/null
    ldconfig 2>/dev/null
  fi
  local vendor=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  [ -e $vendor ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$vendor
  if ldconfig -p 2>/dev/null | grep -q "libEGL.so.1"; then
    export MUJOCO_GL=egl
  else  # no EGL loader (the lent machine without .gl/): importing mujoco would fail with egl
    echo "egl_rendering: no libEGL.so.1 here; MuJoCo rendering off (evaluate with render=false)"
    export MUJOCO_GL=disable
  fi
}

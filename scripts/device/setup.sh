# Source on the device machine: installs the carried wheels (.whl/) and the project on PYTHONPATH.
# The H200 image has torch/triton/numpy/pandas/rich/tensorboard but no hydra/omegaconf/mujoco.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
export PYTHONUNBUFFERED=1
export OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
# Not pip-installed there: expose conf/ as the flashsac_bench.conf package, as the install does.
[ -e flashsac_bench/conf ] || ln -s ../conf flashsac_bench/conf

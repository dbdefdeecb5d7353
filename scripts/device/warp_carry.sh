#!/usr/bin/env bash
# MuJoCo Warp onto a lent GPU machine that has no package index: warp-lang's wheel is larger
# than one call's carry, so its two shared libraries travel xz-compressed in parts over
# back-to-back calls (files outside the copied tree stay on the machine while it is warm),
# and are reassembled, checksummed and installed there.
#
#   here:   bash scripts/device/warp_carry.sh prepare      # .warp/: parts, small wheels, sums
#   there:  bash scripts/device/warp_carry.sh receive      # every call: its carried parts kept
#   there:  bash scripts/device/warp_carry.sh install      # once all parts are there
#
# Each call carries `.warp/base` and one or two `.warp/part_NN` (30 MiB each) beside a small
# working tree; `receive` copies them to /tmp/warp_carry, `install` checks every part's and
# every library's sha256, unpacks the wheels into /tmp/site (the suites' PYTHONPATH, setup.sh)
# and checks that Warp starts and sees the GPU. `.warp/` is ignored by git.
set -euo pipefail
WARP_LANG=1.19.0 MUJOCO_WARP=4.0.0
KEEP=${WARP_CARRY_DIR:-/tmp/warp_carry} SITE=${WARP_SITE:-/tmp/site}
# Python's own lzma decompresses: the machine may lack the xz tool.
UNXZ=(python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.stdin.buffer), sys.stdout.buffer)")

prepare() {
  local tmp; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    -d "$tmp/whl" "warp-lang==$WARP_LANG" "mujoco-warp==$MUJOCO_WARP" etils absl-py
  rm -rf .warp && mkdir -p .warp/base "$tmp/warp"
  (cd "$tmp/warp" && python3 -m zipfile -e "$tmp"/whl/warp_lang-*.whl .)
  for lib in warp.so warp-clang.so; do  # the two large libraries travel apart, compressed
    sha256sum "$tmp/warp/warp/bin/$lib" | awk -v n="$lib" '{print $1"  "n}' >> .warp/base/LIBS.sha256
    xz -9 -T0 -c "$tmp/warp/warp/bin/$lib" > "$tmp/$lib.xz"
    rm "$tmp/warp/warp/bin/$lib"
  done
  cat "$tmp/warp.so.xz" "$tmp/warp-clang.so.xz" | split -b 30M -d - .warp/part_
  stat -c %s "$tmp/warp.so.xz" > .warp/base/warp.so.xz.size
  (cd "$tmp/warp" && tar czf - .) > .warp/base/warp_lang_rest.tgz
  cp "$tmp"/whl/mujoco_warp-*.whl "$tmp"/whl/etils-*.whl "$tmp"/whl/absl_py-*.whl .warp/base/
  (cd .warp && sha256sum part_* > base/PARTS.sha256)
  grep -q "^/.warp/" .git/info/exclude 2>/dev/null || echo "/.warp/" >> .git/info/exclude
  du -sh .warp/base .warp/part_*
  echo "carry .warp/base and one or two parts per call (the working tree counts too)"
}

receive() {
  mkdir -p "$KEEP"
  cp -r .warp/base "$KEEP/" 2>/dev/null || true
  for p in .warp/part_*; do [ -e "$p" ] && cp "$p" "$KEEP/"; done
  ls -la "$KEEP"
}

install() {
  cd "$KEEP"
  local missing; missing=$(awk '{print $2}' base/PARTS.sha256 | while read -r p; do
    [ -e "$p" ] || echo "$p"; done)
  if [ -n "$missing" ]; then echo "missing parts: $missing (carry them, then receive)"; exit 2; fi
  sha256sum -c --quiet base/PARTS.sha256
  mkdir -p "$SITE"
  tar xzf base/warp_lang_rest.tgz -C "$SITE"
  local size; size=$(cat base/warp.so.xz.size)
  cat part_* > all.xz
  head -c "$size" all.xz | "${UNXZ[@]}" > "$SITE/warp/bin/warp.so"
  tail -c +"$((size + 1))" all.xz | "${UNXZ[@]}" > "$SITE/warp/bin/warp-clang.so"
  rm all.xz
  (cd "$SITE/warp/bin" && sha256sum -c --quiet "$KEEP/base/LIBS.sha256")
  for w in base/*.whl; do python3 -m zipfile -e "$w" "$SITE"; done
  PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH} python3 -c "
import warp as wp, mujoco_warp
wp.init()
print('warp', wp.__version__, 'mujoco_warp', mujoco_warp.__version__ if hasattr(mujoco_warp, '__version__') else '?',
      'devices', [str(d) for d in wp.get_devices()])"
}

case "${1:-}" in
prepare) prepare ;;
receive) receive ;;
install) install ;;
*) echo "usage: bash scripts/device/warp_carry.sh prepare|receive|install"; exit 2 ;;
esac

#!/bin/sh
# The whole profiler on a real arm64 userland, under emulation: a Debian 12
# arm64 root (mmdebstrap + qemu-user through binfmt_misc) with Debian's
# arm64 python3-torch, the project built for it, and `deepcontext run` on a
# small training program inside it. Asserts that the report shows Python
# lines -> aten:: operators -> [backward], that --native adds native frames,
# and that report, analyze and the html, speedscope and folded exports work
# there; exits non-zero, with the reason, otherwise (`make test-aarch64-root`).
#
#   scripts/test-aarch64-root.sh            (as root, on an x86-64 host)
#
# Environment:
#   DEEPCONTEXT_ARM64_ROOT   cache folder (default /var/cache/deepcontext-arm64-root);
#                            the root is built once (~30 min) and reused
#   DEEPCONTEXT_ARM64_BUILD  cross (default) or native
#   DEEPCONTEXT_WEB_DIST     prebuilt viewer (app.js, app.css); default: the
#                            repository's build/web/dist if present, else npm
#
# Why cross-compiled by default: building the project natively inside the
# root runs every g++ under qemu-user. Measured on the 2-core development
# machine: tools/cli/run_command.cc takes 115 s of CPU natively in the root
# and 11.5 s with the cross compiler; the cross build of what this test
# needs takes 17 min, so a native one would take about 3 hours. The default therefore compiles with Debian's
# aarch64-linux-gnu-g++ (GCC 12, like the root's) against the root as
# sysroot (cmake/toolchain-aarch64-sysroot.cmake), so the binaries link the
# root's own libraries. Everything that runs - the CLI, the injected runtime,
# the Python package, the PyTorch adapter's compile by the root's g++ on
# first use, torch itself - runs as aarch64 code in the root.
# DEEPCONTEXT_ARM64_BUILD=native builds inside the root instead (for real
# arm64 hosts or machines with time to spare).
set -eu

CACHE=${DEEPCONTEXT_ARM64_ROOT:-/var/cache/deepcontext-arm64-root}
ROOT=$CACHE/rootfs
BUILD_MODE=${DEEPCONTEXT_ARM64_BUILD:-cross}
SUITE=bookworm
MIRROR=${DEEPCONTEXT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# What the project needs in the root: the build (for a native build and the
# sysroot of a cross one), Python, torch with its C++ headers (the adapter
# is compiled against them on first use) and g++ for that compile.
PACKAGES="python3 python3-dev python3-torch libtorch-dev g++ make cmake
ninja-build pkg-config zlib1g-dev libcli11-dev nlohmann-json3-dev
libunwind-dev libdw-dev libprotobuf-dev protobuf-compiler libcpp-httplib-dev
libstdc++-12-dev libgtest-dev"
REPO=$(cd "$(dirname "$0")/.." && pwd)
START=$(date +%s)

say() { echo "test-aarch64-root: [$(($(date +%s) - START))s] $*"; }
fail() { echo "test-aarch64-root: FAILED: $*" >&2; exit 1; }

# --- The host: x86-64, root, tools, binfmt_misc with qemu-aarch64 --------
case "$BUILD_MODE" in
  cross|native) ;;
  *) fail "DEEPCONTEXT_ARM64_BUILD must be cross or native, not '$BUILD_MODE'" ;;
esac
[ "$(uname -m)" = "x86_64" ] ||
  fail "this script emulates arm64 on an x86-64 host; on $(uname -m) build and run natively"
[ "$(id -u)" -eq 0 ] ||
  fail "needs root (mmdebstrap --mode=root, chroot, mount); run it with sudo"
for tool in mmdebstrap arch-test qemu-aarch64-static aarch64-linux-gnu-g++ \
            protoc cmake ninja unshare chroot; do
  command -v "$tool" >/dev/null 2>&1 ||
    fail "$tool not found (run \`make deps\`)"
done

BINFMT=/proc/sys/fs/binfmt_misc
if [ ! -e "$BINFMT/register" ]; then
  mount -t binfmt_misc binfmt_misc "$BINFMT" 2>/dev/null ||
    fail "binfmt_misc cannot be mounted at $BINFMT (a container without
  CAP_SYS_ADMIN, or a kernel without CONFIG_BINFMT_MISC): arm64 programs cannot
  run in a chroot here. Run this on a host (or VM) that allows it."
fi
if [ ! -e "$BINFMT/qemu-aarch64" ]; then
  # The F flag makes the kernel open the static interpreter now, so it also
  # works inside the chroot, where /usr/libexec/qemu-binfmt does not exist.
  conf=/usr/lib/binfmt.d/qemu-aarch64.conf
  [ -r "$conf" ] || fail "$conf missing (install qemu-user-static)"
  cat "$conf" > "$BINFMT/register" 2>/dev/null ||
    fail "cannot register the qemu-aarch64 handler in $BINFMT/register"
fi
grep -qx enabled "$BINFMT/qemu-aarch64" ||
  fail "the qemu-aarch64 binfmt handler is registered but disabled ($BINFMT/qemu-aarch64)"
grep -q '^flags:.*F' "$BINFMT/qemu-aarch64" ||
  fail "the qemu-aarch64 binfmt handler lacks the F flag: it cannot run inside a chroot
  (unregister it: echo -1 > $BINFMT/qemu-aarch64, and run this again)"
say "binfmt_misc: qemu-aarch64 handler registered ($(sed -n 's/^interpreter //p' "$BINFMT/qemu-aarch64"))"

# Runs a command in the root with /proc, /sys and /dev, in a private mount
# namespace so that nothing stays mounted when it ends.
in_root() {
  # shellcheck disable=SC2016  # expanded by the inner shell
  unshare --mount --propagation private sh -c '
    root=$1; shift
    mount -t proc proc "$root/proc" && mount -t sysfs sys "$root/sys" &&
      mount --rbind /dev "$root/dev" || exit 97
    exec chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
      LANG=C.UTF-8 "$@"' sh "$ROOT" "$@"
}

# --- The root, built once and cached ------------------------------------
# The base is built once per suite and mirror; packages added to PACKAGES
# later are installed into it (under qemu) rather than rebuilding it.
STAMP_TEXT="$SUITE $MIRROR"
if [ ! -f "$ROOT/.deepcontext-root" ] ||
   [ "$(cat "$ROOT/.deepcontext-root")" != "$STAMP_TEXT" ]; then
  say "building the Debian $SUITE arm64 root in $ROOT (once; 30 min on a busy 2-core machine)"
  mkdir -p "$CACHE"
  rm -rf "$ROOT.tmp" "$ROOT"
  # shellcheck disable=SC2086  # PACKAGES is a word list
  nice -n 15 mmdebstrap --arch=arm64 --variant=apt --mode=root \
    --include="$(echo $PACKAGES | tr ' ' ',')" \
    "$SUITE" "$ROOT.tmp" "$MIRROR" ||
    fail "mmdebstrap could not build the arm64 root (see above)"
  echo "$STAMP_TEXT" > "$ROOT.tmp/.deepcontext-root"
  mv "$ROOT.tmp" "$ROOT"
else
  say "reusing the arm64 root in $ROOT"
fi
chroot "$ROOT" /bin/true ||
  fail "an arm64 program does not run in $ROOT through binfmt_misc"
[ "$(chroot "$ROOT" uname -m)" = "aarch64" ] ||
  fail "the root does not run as aarch64"
missing=""
for package in $PACKAGES; do
  # shellcheck disable=SC2016  # a dpkg-query format, not a shell expansion
  chroot "$ROOT" dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
    grep -q "install ok installed" || missing="$missing $package"
done
if [ -n "$missing" ]; then
  say "installing into the root:$missing"
  # shellcheck disable=SC2086
  { in_root apt-get update -q &&
    nice -n 15 in_root env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -q --no-install-recommends $missing; } ||
    fail "could not install$missing in the arm64 root"
fi
TORCH_VERSION=$(chroot "$ROOT" python3 -c 'import torch; print(torch.__version__)') ||
  fail "torch does not import in the arm64 root"
say "root: $(chroot "$ROOT" python3 --version), torch $TORCH_VERSION"

# Debian arm64's own CPython headers (aarch64 pyconfig.h) must give the
# committed aarch64 layouts.
python3 "$REPO/runtime/python/layouts/generate_layouts.py" --arch aarch64 \
  --sysroot "$ROOT" --check ||
  fail "the committed aarch64 CPython layouts disagree with the arm64 root's headers"

# --- The sources and the build ------------------------------------------
SRC=$ROOT/src/deepcontext
# One build folder per mode: their CMake caches cannot be shared.
if [ "$BUILD_MODE" = cross ]; then BUILD_NAME=deepcontext; else BUILD_NAME=deepcontext-native; fi
BUILD=$ROOT/build/$BUILD_NAME
rm -rf "$SRC"
mkdir -p "$SRC" "$BUILD"
# Tracked and new (not ignored) files: the working tree as it is. tar keeps
# their modification times, so the cached build recompiles only what changed.
(cd "$REPO" && git ls-files -z --cached --others --exclude-standard |
   tar --null -T - -cf -) | tar -xf - -C "$SRC"

WEB_DIST=${DEEPCONTEXT_WEB_DIST:-}
if [ -z "$WEB_DIST" ] && [ -f "$REPO/build/web/dist/app.js" ]; then
  WEB_DIST=$REPO/build/web/dist
fi
if [ -n "$WEB_DIST" ]; then
  # The viewer is JavaScript: the same files on every architecture.
  rm -rf "$ROOT/build/web-dist"
  cp -rp "$WEB_DIST" "$ROOT/build/web-dist"
  WEB_ARG=-DDEEPCONTEXT_WEB_DIST=/build/web-dist
  HOST_WEB_ARG=-DDEEPCONTEXT_WEB_DIST=$ROOT/build/web-dist
else
  WEB_ARG="" HOST_WEB_ARG=""
fi
LAUNCHER=""
if command -v ccache >/dev/null 2>&1; then
  LAUNCHER="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
fi
TARGETS="deepcontext_cli deepcontext deepcontext_python deepcontext_torch_adapter_source python_frame_probe"
say "building the project for arm64 ($BUILD_MODE)"
case "$BUILD_MODE" in
  cross)
    # shellcheck disable=SC2086  # empty or several arguments
    cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
          -DCMAKE_TOOLCHAIN_FILE="$SRC/cmake/toolchain-aarch64-sysroot.cmake" \
          -DDEEPCONTEXT_AARCH64_SYSROOT="$ROOT" -DDEEPCONTEXT_WERROR=ON \
          -DDEEPCONTEXT_PYTHON=/usr/bin/python3 $HOST_WEB_ARG $LAUNCHER >/dev/null
    # shellcheck disable=SC2086
    nice -n 15 cmake --build "$BUILD" --target $TARGETS
    ;;
  native)
    [ -n "$WEB_ARG" ] ||
      fail "a native build needs a prebuilt viewer (no npm in the root): set DEEPCONTEXT_WEB_DIST"
    # shellcheck disable=SC2086  # empty or several arguments
    in_root cmake -S /src/deepcontext -B /build/$BUILD_NAME -G Ninja \
          -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEEPCONTEXT_WERROR=ON \
          -DDEEPCONTEXT_PYTHON=/usr/bin/python3 $WEB_ARG >/dev/null
    # shellcheck disable=SC2086
    nice -n 15 in_root cmake --build /build/$BUILD_NAME --target $TARGETS
    ;;
  *) fail "DEEPCONTEXT_ARM64_BUILD must be cross or native, not '$BUILD_MODE'" ;;
esac
file -L "$BUILD/bin/deepcontext" | grep -q "ARM aarch64" ||
  fail "$BUILD/bin/deepcontext is not an aarch64 program"

# --- Inside the root -----------------------------------------------------
DC=/build/$BUILD_NAME/bin/deepcontext
OUT=/build/out
rm -rf "$ROOT$OUT"
mkdir -p "$ROOT$OUT"

say "frame reader on the root's real interpreter (check_frames.py)"
in_root python3 /src/deepcontext/tests/unit/runtime/python/check_frames.py \
  /build/$BUILD_NAME/lib/libpython_frame_probe.so ||
  fail "the frame reader disagrees with CPython on aarch64 (check_frames.py)"

# A few steps of the demo's CNN: enough for every layer, short under qemu.
TRAIN="python3 /src/deepcontext/examples/train_cnn.py --steps 3 --batch 4 --device cpu"
say "deepcontext run (first run compiles the PyTorch adapter with the root's g++; minutes under qemu)"
# shellcheck disable=SC2086
in_root $DC run -o $OUT/train.dctx -- $TRAIN > "$ROOT$OUT/run.log" 2>&1 || {
  cat "$ROOT$OUT/run.log"; fail "deepcontext run failed in the arm64 root"; }
if grep -q "PyTorch adapter could not be built" "$ROOT$OUT/run.log"; then
  cat "$ROOT$OUT/run.log"; fail "the PyTorch adapter did not build or load on arm64"
fi
say "deepcontext run --native"
# shellcheck disable=SC2086
in_root $DC run --native -o $OUT/native.dctx -- $TRAIN > "$ROOT$OUT/native.log" 2>&1 || {
  cat "$ROOT$OUT/native.log"; fail "deepcontext run --native failed in the arm64 root"; }

say "report, analyze, exports"
in_root $DC report $OUT/train.dctx --depth 0 --min-percent 0 --top 0 --width 0 \
  > "$ROOT$OUT/report.txt" || fail "deepcontext report failed"
in_root $DC report $OUT/native.dctx --depth 0 --min-percent 0 --top 0 --width 0 \
  > "$ROOT$OUT/native.txt" || fail "deepcontext report (native profile) failed"
in_root $DC analyze $OUT/train.dctx --top 5 > "$ROOT$OUT/analyze.txt" ||
  fail "deepcontext analyze failed"
for format in html speedscope folded; do
  in_root $DC export $OUT/train.dctx --format $format -o $OUT/train.$format ||
    fail "deepcontext export --format $format failed"
  [ -s "$ROOT$OUT/train.$format" ] || fail "export $format wrote nothing"
done
in_root $DC export $OUT/native.dctx --format folded -o $OUT/native.folded ||
  fail "deepcontext export of the --native profile failed"

python3 "$REPO/tests/aarch64/check_root_profile.py" "$ROOT$OUT" ||
  fail "the arm64 profile lacks a layer (see above)"
say "passed: Python lines -> aten:: operators -> [backward], native frames, report, analyze, exports on arm64"
echo "--- report excerpt (arm64) ---"
in_root $DC report $OUT/train.dctx --depth 10 --min-percent 3 | head -40

#!/bin/sh
# Installs the Debian 12 packages needed to build, test and demo DeepContext.
# Idempotent: only missing packages are installed (apt-get runs only then).
#
#   scripts/install-deps.sh          everything (`make deps`, `make test`)
#   scripts/install-deps.sh --demo   what `make demo` needs: no torchvision,
#                                    no aarch64 cross toolchain
#
# libtorch-dev holds torch's C++ headers: python3-torch's torch/include/ATen is
# a symlink into it, and without it the PyTorch adapter (compiled on first use
# against the installed torch) cannot build, so profiles lose every operator.
# --no-install-recommends does not bring it in with python3-torch.
# python3-venv: the install test puts `cmake --install` into a venv.
set -eu

DEMO_ONLY=0
case "${1:-}" in
  --demo) DEMO_ONLY=1 ;;
  "") ;;
  *) echo "install-deps: unknown argument '$1' (--demo or nothing)" >&2; exit 2 ;;
esac

# The build (GoogleTest too, so that configuring never warns of missing
# tests; protobuf for the pprof export; cpp-httplib and Node.js for the
# viewer, which is part of the command; libdeflate, which the reader loads
# at run time to inflate profiles faster), the adapter's compile and the demo.
PACKAGES="
  cmake ninja-build g++ make pkg-config
  zlib1g-dev libdeflate-dev libcli11-dev nlohmann-json3-dev libunwind-dev libdw-dev
  libgtest-dev libgmock-dev libbenchmark-dev libprotobuf-dev protobuf-compiler
  libcpp-httplib-dev nodejs
  python3 python3-dev python3-pytest python3-torch libtorch-dev
"
# The viewer's front end is built with npm (web/package-lock.json). A
# Node.js from elsewhere (e.g. NodeSource) brings its own npm, which
# Debian's npm package would conflict with.
if ! command -v npm >/dev/null 2>&1; then
  PACKAGES="$PACKAGES npm"
fi
# The tests alone: torchvision models, the reader's fuzzer (clang, libFuzzer),
# the browser tests (chromium), the analyzer's pandas interface, and the
# install tests (venv, pip).
if [ "$DEMO_ONLY" -eq 0 ]; then
  PACKAGES="$PACKAGES
  python3-torchvision python3-pandas clang libclang-rt-14-dev chromium
  python3-venv python3-pip python3-setuptools python3-wheel
"
fi
# The aarch64 cross build of `make test` (scripts/test-aarch64.sh): the cross
# compiler, qemu-user, and the target's libraries as multiarch packages;
# mmdebstrap and arch-test build the arm64 root of scripts/test-aarch64-root.sh.
CROSS_ARCH=""
if [ "$DEMO_ONLY" -eq 0 ] && [ "$(uname -m)" = "x86_64" ]; then
  CROSS_ARCH="arm64"
  PACKAGES="$PACKAGES
  g++-aarch64-linux-gnu qemu-user-static
  zlib1g-dev:arm64 libunwind-dev:arm64 libstdc++6:arm64
  mmdebstrap arch-test file
"
fi

missing=""
for package in $PACKAGES; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $package"
  fi
done

if [ -z "$missing" ]; then
  echo "install-deps: all packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "install-deps: missing packages:$missing; run as root or install them" >&2
    exit 1
  fi
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
if [ -n "$CROSS_ARCH" ] && ! dpkg --print-foreign-architectures | grep -qx "$CROSS_ARCH"; then
  $SUDO dpkg --add-architecture "$CROSS_ARCH"
fi
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing

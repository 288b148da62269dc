#!/bin/sh
# Installs the Debian 12 packages needed to build, test and demo DeepContext.
# Idempotent: only missing packages are installed (apt-get runs only then).
set -eu

PACKAGES="
  cmake ninja-build g++ make pkg-config
  zlib1g-dev libcli11-dev nlohmann-json3-dev libunwind-dev libdw-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-dev python3-pytest python3-torch python3-torchvision
"

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
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing

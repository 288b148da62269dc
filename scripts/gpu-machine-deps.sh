# Sourced (from the repository root) by the scripts that build on the GPU
# machine, which has no network and no apt: the build-only dependencies
# travel as Debian packages in .deps/ (README "GPU machine") and the viewer
# prebuilt in .deps/web-dist (no npm there).
#
# Sourcing unpacks the packages into $DEEPCONTEXT_DEPS_PREFIX and exports
# what finds them: pkg-config files name /usr, which the sysroot maps into
# the prefix, and protoc and the built programs load the unpacked libraries
# from there. This is done here, in the sourcing shell, so that later
# commands (builds, tests) see it too; then
#
#   gpu_machine_configure BUILD PYTHON [cmake options...]
#
# configures BUILD with Ninja (it may run in a pipeline: it sets nothing).
DEEPCONTEXT_DEPS_PREFIX=${DEEPCONTEXT_DEPS_PREFIX:-/tmp/deepcontext-deps}
mkdir -p "$DEEPCONTEXT_DEPS_PREFIX"
for deb in .deps/*.deb; do dpkg -x "$deb" "$DEEPCONTEXT_DEPS_PREFIX"; done
gpu_machine_libdir="$DEEPCONTEXT_DEPS_PREFIX/usr/lib/x86_64-linux-gnu"
export PKG_CONFIG_PATH="$gpu_machine_libdir/pkgconfig:$DEEPCONTEXT_DEPS_PREFIX/usr/share/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$DEEPCONTEXT_DEPS_PREFIX"
export LD_LIBRARY_PATH="$gpu_machine_libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PATH:$DEEPCONTEXT_DEPS_PREFIX/usr/bin"
# The machine's shared zlib, never the unpacked static libz.a, which is not
# position-independent and cannot go into the shared libraries.
rm -f "$gpu_machine_libdir/libz.a"

gpu_machine_configure() {
  local build=$1 python=$2
  shift 2
  local extra=() libz
  if [ -f .deps/web-dist/app.js ]; then
    extra+=("-DDEEPCONTEXT_WEB_DIST=$PWD/.deps/web-dist")
  fi
  libz=$(ls /usr/lib/x86_64-linux-gnu/libz.so.1* 2>/dev/null | head -1)
  if [ -n "$libz" ]; then extra+=("-DZLIB_LIBRARY=$libz"); fi
  if [ ! -f /usr/include/zlib.h ]; then
    extra+=("-DZLIB_INCLUDE_DIR=$DEEPCONTEXT_DEPS_PREFIX/usr/include")
  fi
  cmake -S . -B "$build" -G Ninja -DCMAKE_PREFIX_PATH="$DEEPCONTEXT_DEPS_PREFIX/usr" \
        -DDEEPCONTEXT_PYTHON="$python" "${extra[@]}" "$@"
}

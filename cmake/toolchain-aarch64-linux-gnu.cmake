# Cross build for 64-bit Arm Linux with Debian's cross toolchain
# (g++-aarch64-linux-gnu). Target libraries come from Debian multiarch
# packages (zlib1g-dev:arm64, libunwind-dev:arm64, libstdc++6:arm64; see
# scripts/install-deps.sh): libraries in /usr/lib/aarch64-linux-gnu, headers
# in /usr/include. The cross toolchain links against its own libc and
# libstdc++ in /usr/aarch64-linux-gnu.
#
# Test binaries run under qemu-user, which CTest and gtest_discover_tests
# prefix to every test command through CMAKE_CROSSCOMPILING_EMULATOR.
#
#   cmake -S . -B build-aarch64 -G Ninja \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Makes find_library look in the multiarch folders (/usr/lib/aarch64-linux-gnu)
# and nowhere that holds host (x86-64) libraries.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# pkg-config must describe the target's packages, not the host's.
set(ENV{PKG_CONFIG_LIBDIR}
    "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")

# No -L prefix: the arm64 multiarch packages (libc6:arm64, libstdc++6:arm64,
# libunwind8:arm64) put the dynamic loader at /lib/ld-linux-aarch64.so.1 and
# the libraries where it looks by default. Pointing qemu at the cross
# toolchain's folder instead would pair its ld.so with the multiarch libc.so.6,
# which the loader still finds first: two builds of glibc in one process.
find_program(DEEPCONTEXT_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(DEEPCONTEXT_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${DEEPCONTEXT_QEMU_AARCH64})
endif()

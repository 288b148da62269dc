# Cross build for 64-bit Arm Linux against a Debian arm64 root filesystem
# used as sysroot (scripts/test-aarch64-root.sh builds one with mmdebstrap).
# Every target header and library, protobuf and CLI11 included, comes from
# the root, so the binaries match the userland they run in; only the
# compiler (Debian's g++-aarch64-linux-gnu, the same GCC 12 as the root's)
# and protoc (the same protobuf 3.21 as the root's libprotobuf) are the
# host's.
#
#   cmake -S . -B ROOT/build -G Ninja \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-sysroot.cmake \
#         -DDEEPCONTEXT_AARCH64_SYSROOT=ROOT
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(DEEPCONTEXT_AARCH64_SYSROOT "$ENV{DEEPCONTEXT_AARCH64_SYSROOT}" CACHE PATH
    "Debian arm64 root filesystem to build against")
if(NOT DEEPCONTEXT_AARCH64_SYSROOT OR
   NOT EXISTS "${DEEPCONTEXT_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu")
  message(FATAL_ERROR "DEEPCONTEXT_AARCH64_SYSROOT must name a Debian arm64 "
          "root (got '${DEEPCONTEXT_AARCH64_SYSROOT}')")
endif()
# try_compile projects must see the same sysroot.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES DEEPCONTEXT_AARCH64_SYSROOT)

set(CMAKE_SYSROOT "${DEEPCONTEXT_AARCH64_SYSROOT}")
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_FIND_ROOT_PATH "${DEEPCONTEXT_AARCH64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(ENV{PKG_CONFIG_SYSROOT_DIR} "${DEEPCONTEXT_AARCH64_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
    "${DEEPCONTEXT_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${DEEPCONTEXT_AARCH64_SYSROOT}/usr/share/pkgconfig")

# Test binaries run under qemu-user with the root's loader and libraries.
find_program(DEEPCONTEXT_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(DEEPCONTEXT_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR
      ${DEEPCONTEXT_QEMU_AARCH64} -L ${DEEPCONTEXT_AARCH64_SYSROOT})
endif()

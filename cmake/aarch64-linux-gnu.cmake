# Cross-compiles Sluice for aarch64 Linux with Debian's cross toolchain
# (crossbuild-essential-arm64) against Debian's multiarch arm64 libraries
# (`scripts/setup --arm64`). Used by `make arm64`:
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# gtest_discover_tests runs each test executable right after linking it, and ctest runs
# them again: both go through qemu-user, which must therefore be there at configure time
# (the binfmt_misc handler is not assumed to be registered). No -L prefix: the aarch64
# dynamic loader and libc come from Debian's multiarch libc6:arm64 (/lib/ld-linux-aarch64.so.1),
# and pointing qemu at the cross toolchain's sysroot (-L /usr/aarch64-linux-gnu) mixes that
# sysroot's ld.so with the multiarch libc.so.6, a different glibc build: every thread start
# then hangs.
find_program(SLUICE_QEMU_AARCH64 qemu-aarch64-static)
if(NOT SLUICE_QEMU_AARCH64)
  message(FATAL_ERROR "qemu-aarch64-static not found: run scripts/setup --arm64")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR ${SLUICE_QEMU_AARCH64})

# Libraries, headers and CMake package files come from the arm64 side only: Debian's
# multiarch directories (/usr/lib/aarch64-linux-gnu, under the "/" root), the cross
# toolchain's own sysroot, and the private prefix where scripts/setup unpacks
# libyaml-cpp-dev:arm64 (it cannot be co-installed with the amd64 one on Debian 12).
# Programs (pkg-config, ...) come from the host.
if(DEFINED ENV{SLUICE_ARM64_PREFIX})
  set(SLUICE_ARM64_PREFIX $ENV{SLUICE_ARM64_PREFIX})
else()
  set(SLUICE_ARM64_PREFIX /opt/sluice-arm64)
endif()
set(CMAKE_FIND_ROOT_PATH ${SLUICE_ARM64_PREFIX} /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config (PCRE2) must read the arm64 .pc files, never the host's x86_64 ones.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

# The private prefix is only for linking: no RUNPATH to it, so at run time the binaries load
# libyaml-cpp.so.0.7 from libyaml-cpp0.7:arm64, like every other library.
set(CMAKE_SKIP_BUILD_RPATH ON)

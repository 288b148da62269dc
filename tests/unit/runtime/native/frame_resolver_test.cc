#include "runtime/native/frame_resolver.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <string>

namespace deepcontext::native {
namespace {

// A pc in anonymous executable memory (what JIT compilers emit) lies in no
// module; resolving it must not re-read every module each time.
TEST(FrameResolverTest, UnknownPcSnapshotsOnlyAfterALibraryLoads) {
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_EXEC,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  const uintptr_t jit_pc = reinterpret_cast<uintptr_t>(page) + 16;
  FrameResolver resolver;
  EXPECT_EQ(resolver.snapshots(), 1);
  for (int i = 0; i < 3; ++i) {
    const SymbolizedFrame frame = resolver.Resolve(jit_pc);
    EXPECT_TRUE(frame.module.empty()) << frame.module;
  }
  EXPECT_EQ(resolver.snapshots(), 1);

  // A library loaded later is symbolized: the next unknown pc re-snapshots.
  // libcrypt (an essential package on Debian and Ubuntu) is not linked here.
  void* handle = dlopen("libcrypt.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  void* symbol = dlsym(handle, "crypt");
  ASSERT_NE(symbol, nullptr);
  const SymbolizedFrame loaded =
      resolver.Resolve(reinterpret_cast<uintptr_t>(symbol) + 1);
  EXPECT_EQ(resolver.snapshots(), 2);
  EXPECT_NE(loaded.module.find("libcrypt"), std::string::npos) << loaded.module;
  // Symbolizing may itself load libraries (libdw's helpers): after at most
  // one more snapshot, unknown pcs cost none again.
  resolver.Resolve(jit_pc);
  const int settled = resolver.snapshots();
  EXPECT_LE(settled, 3);
  for (int i = 0; i < 3; ++i) resolver.Resolve(jit_pc);
  EXPECT_EQ(resolver.snapshots(), settled);
  munmap(page, 4096);
}

__attribute__((noinline)) int FunctionOfThisTest() { return 7; }

// ModuleOf names the module Resolve names, without symbolizing; a library
// loaded after the resolver was made is found too.
TEST(FrameResolverTest, ModuleOfIsResolvesModule) {
  FrameResolver resolver;
  const auto here = reinterpret_cast<uintptr_t>(&FunctionOfThisTest) + 1;
  const auto libc = reinterpret_cast<uintptr_t>(&mmap) + 1;
  for (const uintptr_t pc : {here, libc}) {
    const std::string module = resolver.ModuleOf(pc);
    EXPECT_FALSE(module.empty());
    EXPECT_EQ(module, resolver.Resolve(pc).module);
  }
  EXPECT_NE(resolver.ModuleOf(here), resolver.ModuleOf(libc));

  void* handle = dlopen("libcrypt.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  const auto crypt = reinterpret_cast<uintptr_t>(dlsym(handle, "crypt")) + 1;
  EXPECT_NE(resolver.ModuleOf(crypt).find("libcrypt"), std::string::npos)
      << resolver.ModuleOf(crypt);
  EXPECT_EQ(resolver.ModuleOf(crypt), resolver.Resolve(crypt).module);

  void* page = mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  EXPECT_EQ(resolver.ModuleOf(reinterpret_cast<uintptr_t>(page) + 16), "");
  munmap(page, 4096);
}

}  // namespace
}  // namespace deepcontext::native

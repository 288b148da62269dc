#include "runtime/native/symbolizer.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "runtime/native/module_map.h"
#include "runtime/native/native_stack.h"
#include "tests/unit/runtime/native/call_chain.h"
#include "tests/unit/runtime/native/libc_function.h"

extern "C" uintptr_t native_fixture_hidden_pc();

namespace deepcontext::native {
namespace {

using native_chain::CaptureRequest;

class SymbolizerBackendTest : public ::testing::TestWithParam<bool> {
 protected:
  Symbolizer::Options options() const {
    Symbolizer::Options options;
    options.use_debug_info = GetParam();
    return options;
  }
};

TEST_P(SymbolizerBackendTest, NamesTheCallChainDemangled) {
  uintptr_t pcs[kMaxNativeDepth];
  const int n = native_chain::ChainA(CaptureRequest{nullptr, 0}, pcs,
                                     kMaxNativeDepth);
  ASSERT_GE(n, 3);
  Symbolizer symbolizer(ModuleMap::Snapshot(), options());
  const SymbolizedFrame& c = symbolizer.Symbolize(pcs[n - 1]);
  EXPECT_EQ(c.function,
            "native_chain::ChainC(native_chain::CaptureRequest const&, "
            "unsigned long*, int)");
  EXPECT_NE(c.module.find("native_unit_test"), std::string::npos) << c.module;
  EXPECT_EQ(symbolizer.Symbolize(pcs[n - 2]).function.rfind(
                "native_chain::ChainB(", 0),
            0u);
  EXPECT_EQ(symbolizer.Symbolize(pcs[n - 3]).function.rfind(
                "native_chain::ChainA(", 0),
            0u);
}

TEST_P(SymbolizerBackendTest, StrippedCodeGivesModuleAndOffset) {
  const uintptr_t pc = native_fixture_hidden_pc();
  Dl_info info;
  ASSERT_NE(dladdr(reinterpret_cast<void*>(pc), &info), 0);
  Symbolizer symbolizer(ModuleMap::Snapshot(), options());
  const SymbolizedFrame& frame = symbolizer.Symbolize(pc);
  EXPECT_EQ(frame.function, "");
  EXPECT_EQ(BaseName(frame.module), "libnative_stripped_fixture.so");
  EXPECT_EQ(frame.module_offset,
            pc - reinterpret_cast<uintptr_t>(info.dli_fbase));
  char expected[64];
  std::snprintf(expected, sizeof(expected),
                "libnative_stripped_fixture.so+0x%lx",
                static_cast<unsigned long>(frame.module_offset));
  EXPECT_EQ(frame.DisplayName(), expected);
}

TEST_P(SymbolizerBackendTest, AddressOutsideEveryModuleIsHex) {
  Symbolizer symbolizer(ModuleMap::Snapshot(), options());
  const SymbolizedFrame& frame = symbolizer.Symbolize(0x10);
  EXPECT_EQ(frame.function, "");
  EXPECT_EQ(frame.module, "");
  EXPECT_EQ(frame.DisplayName(), "0x10");
}

TEST_P(SymbolizerBackendTest, ExportedLibcFunctionIsNamed) {
  // A pc inside a libc function exported in its dynamic symbol table.
  void* getpid_address = dlsym(RTLD_DEFAULT, "getpid");
  ASSERT_NE(getpid_address, nullptr);
  Symbolizer symbolizer(ModuleMap::Snapshot(), options());
  const SymbolizedFrame& frame =
      symbolizer.Symbolize(reinterpret_cast<uintptr_t>(getpid_address) + 1);
  EXPECT_NE(frame.function.find("getpid"), std::string::npos)
      << frame.DisplayName();
  // No symbol version suffix ("getpid@@GLIBC_2.2.5").
  EXPECT_EQ(frame.function.find('@'), std::string::npos) << frame.function;
  EXPECT_NE(BaseName(frame.module).find("libc"), std::string::npos)
      << frame.module;
}

INSTANTIATE_TEST_SUITE_P(Backends, SymbolizerBackendTest,
                         ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "debug_info"
                                                         : "dladdr");
                         });

TEST(SymbolizerTest, DebugInfoGivesFileAndLine) {
  Symbolizer symbolizer(ModuleMap::Snapshot());
#if defined(DEEPCONTEXT_HAVE_LIBDW)
  ASSERT_STREQ(symbolizer.BackendName(), "libdw");
  uintptr_t pcs[kMaxNativeDepth];
  const int n = native_chain::ChainA(CaptureRequest{nullptr, 0}, pcs,
                                     kMaxNativeDepth);
  ASSERT_GE(n, 1);
  const SymbolizedFrame& c = symbolizer.Symbolize(pcs[n - 1]);
  EXPECT_NE(c.file.find("call_chain.cc"), std::string::npos) << c.file;
  EXPECT_GT(c.line, 0);
#else
  EXPECT_STREQ(symbolizer.BackendName(), "dladdr");
#endif
}

TEST(SymbolizerTest, DebugInfoReadsOnlyTheModulesItNames) {
  Symbolizer symbolizer(ModuleMap::Snapshot());
  if (std::string(symbolizer.BackendName()) != "libdw") GTEST_SKIP() << "no libdw";
  EXPECT_EQ(symbolizer.DebugInfoModules(), 0u);
  const auto libc_pc = testing::LibcPc("qsort");
  EXPECT_EQ(symbolizer.Symbolize(libc_pc).function, "qsort");
  // libc only: this process maps libstdc++, libm, libgcc_s, libdw and more.
  EXPECT_EQ(symbolizer.DebugInfoModules(), 1u);
  uintptr_t pcs[kMaxNativeDepth];
  const int n = native_chain::ChainA(CaptureRequest{nullptr, 0}, pcs, kMaxNativeDepth);
  ASSERT_GE(n, 1);
  EXPECT_EQ(symbolizer.Symbolize(pcs[n - 1]).function.rfind("native_chain::ChainC(", 0), 0u);
  EXPECT_EQ(symbolizer.DebugInfoModules(), 2u);
}

TEST(SymbolizerTest, CachesPerPc) {
  Symbolizer symbolizer(ModuleMap::Snapshot());
  const uintptr_t pc = native_fixture_hidden_pc();
  const SymbolizedFrame* first = &symbolizer.Symbolize(pc);
  EXPECT_EQ(&symbolizer.Symbolize(pc), first);
}

TEST(SymbolizerTest, DemangleLeavesPlainNames) {
  EXPECT_EQ(Demangle("_ZN12native_chain6ChainAEv"), "native_chain::ChainA()");
  EXPECT_EQ(Demangle("cuLaunchKernel"), "cuLaunchKernel");
  EXPECT_EQ(Demangle("_Zinvalid"), "_Zinvalid");
  EXPECT_EQ(Demangle(nullptr), "");
}

TEST(ModuleMapTest, FindsExecutableAndLibrary) {
  const ModuleMap modules = ModuleMap::Snapshot();
  const Module* self =
      modules.Find(reinterpret_cast<uintptr_t>(&native_chain::ChainA));
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(BaseName(self->path), "native_unit_test");
  // Debian's toolchain links with --build-id (20-byte SHA-1 by default).
  EXPECT_EQ(self->build_id.size(), 40u);
  const Module* fixture = modules.Find(native_fixture_hidden_pc());
  ASSERT_NE(fixture, nullptr);
  EXPECT_NE(fixture, self);
  EXPECT_EQ(modules.Find(0x10), nullptr);
}

TEST(ModuleMapTest, ExplicitModulesAreSorted) {
  const ModuleMap modules({Module{"/b.so", 0x2000, 0x2000, 0x3000, ""},
                           Module{"/a.so", 0x1000, 0x1000, 0x1800, ""}});
  ASSERT_NE(modules.Find(0x1000), nullptr);
  EXPECT_EQ(modules.Find(0x1000)->path, "/a.so");
  EXPECT_EQ(modules.Find(0x17ff)->path, "/a.so");
  EXPECT_EQ(modules.Find(0x1800), nullptr);
  EXPECT_EQ(modules.Find(0x2fff)->path, "/b.so");
  EXPECT_EQ(modules.Find(0x3000), nullptr);
}

}  // namespace
}  // namespace deepcontext::native

#include "runtime/native/dynamic_symbols.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "runtime/native/module_map.h"

namespace deepcontext::native {
namespace {

// dladdr's answer with the symbolizer's rule: a name only when the symbol
// covers the address.
std::string DladdrName(uintptr_t address) {
  Dl_info info;
  ElfW(Sym)* symbol = nullptr;
  if (dladdr1(reinterpret_cast<void*>(address), &info,
              reinterpret_cast<void**>(&symbol), RTLD_DL_SYMENT) == 0 ||
      info.dli_sname == nullptr || symbol == nullptr) {
    return "";
  }
  const uintptr_t offset = address - reinterpret_cast<uintptr_t>(info.dli_saddr);
  const bool covers =
      symbol->st_size > 0 ? offset < symbol->st_size : offset == 0;
  return covers ? info.dli_sname : "";
}

std::string IndexName(const DynamicSymbols& symbols, uintptr_t address) {
  const char* name = symbols.Find(address);
  return name != nullptr ? name : "";
}

// Every address of a 64 KiB stretch of code from `anchor` on, through many
// functions and the gaps between them, gets dladdr's name from the index.
void ExpectSameAsDladdr(const void* anchor) {
  const auto address = reinterpret_cast<uintptr_t>(anchor);
  const ModuleMap modules = ModuleMap::Snapshot();
  const Module* module = modules.Find(address);
  ASSERT_NE(module, nullptr);
  const auto symbols = DynamicSymbols::Load(module->bias, module->start);
  ASSERT_NE(symbols, nullptr) << module->path;
  EXPECT_GT(symbols->size(), 10u) << module->path;
  int named = 0;
  for (uintptr_t pc = address; pc < address + 65536 && pc < module->end;
       pc += 3) {
    const std::string expected = DladdrName(pc);
    ASSERT_EQ(IndexName(*symbols, pc), expected)
        << module->path << " +0x" << std::hex << (pc - module->bias);
    if (!expected.empty()) ++named;
  }
  EXPECT_GT(named, 100) << module->path;
}

TEST(DynamicSymbolsTest, AgreesWithDladdrInLibc) {
  ExpectSameAsDladdr(reinterpret_cast<const void*>(&qsort));
}

TEST(DynamicSymbolsTest, AgreesWithDladdrInLibstdcxx) {
  // A function of libstdc++ itself (not inlined into this binary).
  void* function = dlsym(RTLD_DEFAULT, "_ZNSt6chrono3_V212steady_clock3nowEv");
  ASSERT_NE(function, nullptr);
  ExpectSameAsDladdr(function);
}

TEST(DynamicSymbolsTest, NoIndexForAnUnloadedAddress) {
  EXPECT_EQ(DynamicSymbols::Load(0x1000, 0x2000), nullptr);
}

}  // namespace
}  // namespace deepcontext::native

// DwflSymbolIndex against the libdwfl call it replaces, on the modules of
// this process: the test binary (a full .symtab: locals, aliases, weak
// template instances), libc and libstdc++ (.dynsym), libdw itself.
#include "runtime/native/dwfl_symbol_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/native/module_map.h"

namespace deepcontext::native {
namespace {

// libdwfl over this process's modules, reported as the symbolizer reports
// them (symbolizer.cc).
class ProcessDwfl {
 public:
  ProcessDwfl() {
    callbacks_.find_elf = dwfl_build_id_find_elf;
    callbacks_.find_debuginfo = dwfl_standard_find_debuginfo;
    callbacks_.section_address = dwfl_offline_section_address;
    dwfl_ = dwfl_begin(&callbacks_);
    if (dwfl_ == nullptr) return;
    dwfl_report_begin(dwfl_);
    const ModuleMap modules = ModuleMap::Snapshot();
    for (const Module& module : modules.modules()) {
      if (module.path.empty() || module.path[0] != '/') continue;
      dwfl_report_elf(dwfl_, module.path.c_str(), module.path.c_str(), -1, module.bias,
                      /*add_p_vaddr=*/true);
    }
    dwfl_report_end(dwfl_, nullptr, nullptr);
  }
  ~ProcessDwfl() {
    if (dwfl_ != nullptr) dwfl_end(dwfl_);
  }
  Dwfl_Module* ModuleOf(const void* address) const {
    return dwfl_ != nullptr ? dwfl_addrmodule(dwfl_, reinterpret_cast<Dwarf_Addr>(address))
                            : nullptr;
  }

 private:
  Dwfl_Callbacks callbacks_{};
  Dwfl* dwfl_ = nullptr;
};

// dwfl_module_addrinfo's answer with the symbolizer's rule: a name only
// when the symbol covers the address.
std::string LibdwName(Dwfl_Module* module, GElf_Addr address) {
  GElf_Off offset = 0;
  GElf_Sym symbol;
  const char* name =
      dwfl_module_addrinfo(module, address, &offset, &symbol, nullptr, nullptr, nullptr);
  if (name == nullptr) return "";
  const bool covers = symbol.st_size > 0 ? offset < symbol.st_size : offset == 0;
  return covers ? name : "";
}

struct Agreement {
  int checked = 0;
  int named = 0;
  int asked = 0;  // answers left to libdw (a label at the address)
};

// The index's answer, with libdw asked where the index says to, against
// libdw's alone at every address in `addresses`.
Agreement ExpectSameAsLibdw(Dwfl_Module* module, const std::vector<GElf_Addr>& addresses) {
  const DwflSymbolIndex index(module);
  Agreement agreement;
  for (const GElf_Addr address : addresses) {
    DwflSymbolIndex::Symbol symbol;
    std::string indexed;
    switch (index.Find(address, &symbol)) {
      case DwflSymbolIndex::Answer::kSized:
        indexed = symbol.name;
        EXPECT_LE(symbol.value, address);
        EXPECT_LT(address - symbol.value, symbol.size);
        break;
      case DwflSymbolIndex::Answer::kNone:
        break;
      case DwflSymbolIndex::Answer::kAskLibdw:
        ++agreement.asked;
        indexed = LibdwName(module, address);
        break;
    }
    const std::string expected = LibdwName(module, address);
    EXPECT_EQ(indexed, expected) << dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr,
                                                     nullptr, nullptr, nullptr)
                                 << " 0x" << std::hex << address;
    if (indexed != expected) break;  // one report per module is enough
    ++agreement.checked;
    if (!expected.empty()) ++agreement.named;
  }
  return agreement;
}

// Addresses that tell rules apart: each symbol's first and last byte and
// the bytes around it (a gap, an alias, a neighbour) for an even spread of
// the table, and an even spread over the module's code between them.
std::vector<GElf_Addr> AddressesToCheck(Dwfl_Module* module, int symbols, int spread) {
  std::vector<GElf_Addr> addresses;
  const int count = dwfl_module_getsymtab(module);
  GElf_Addr low = ~GElf_Addr{0};
  GElf_Addr high = 0;
  const int stride = std::max(1, count / symbols);
  for (int i = 1; i < count; ++i) {
    GElf_Sym symbol;
    GElf_Addr value = 0;
    if (dwfl_module_getsym_info(module, i, &symbol, &value, nullptr, nullptr, nullptr) ==
            nullptr ||
        GELF_ST_TYPE(symbol.st_info) != STT_FUNC || value == 0) {
      continue;
    }
    low = std::min(low, value);
    high = std::max(high, value + symbol.st_size);
    if (i % stride != 0) continue;
    for (const GElf_Addr address :
         {value - 1, value, value + 1, value + symbol.st_size / 2,
          value + symbol.st_size - 1, value + symbol.st_size}) {
      addresses.push_back(address);
    }
  }
  if (high > low) {
    for (int i = 0; i < spread; ++i) {
      addresses.push_back(low + (high - low) / spread * i + static_cast<GElf_Addr>(i % 61));
    }
  }
  return addresses;
}

void ExpectSameAsLibdwIn(const void* anchor, int min_named) {
  const ProcessDwfl dwfl;
  Dwfl_Module* module = dwfl.ModuleOf(anchor);
  ASSERT_NE(module, nullptr);
  ASSERT_GT(dwfl_module_getsymtab(module), 10);
  const Agreement agreement =
      ExpectSameAsLibdw(module, AddressesToCheck(module, /*symbols=*/600, /*spread=*/1500));
  EXPECT_GT(agreement.named, min_named);
  // Labels at an address are rare: the index answers nearly everything.
  EXPECT_LT(agreement.asked * 20, agreement.checked);
}

// Static, so only the full .symtab names it (a local symbol).
__attribute__((noinline)) int LocalFunction(int x) {
  asm volatile("" ::: "memory");
  return x * 3 + 1;
}

TEST(DwflSymbolIndexTest, AgreesWithLibdwInTheTestBinary) {
  ExpectSameAsLibdwIn(reinterpret_cast<const void*>(&LocalFunction), 1000);
}

TEST(DwflSymbolIndexTest, AgreesWithLibdwInLibc) {
  ExpectSameAsLibdwIn(reinterpret_cast<const void*>(&qsort), 500);
}

TEST(DwflSymbolIndexTest, AgreesWithLibdwInLibstdcxx) {
  ExpectSameAsLibdwIn(
      reinterpret_cast<const void*>(static_cast<void (*)(void*)>(&::operator delete)), 500);
}

TEST(DwflSymbolIndexTest, AgreesWithLibdwInLibdw) {
  ExpectSameAsLibdwIn(reinterpret_cast<const void*>(&dwfl_module_addrinfo), 100);
}

TEST(DwflSymbolIndexTest, NamesALocalFunction) {
  const ProcessDwfl dwfl;
  const auto address = reinterpret_cast<GElf_Addr>(&LocalFunction);
  Dwfl_Module* module = dwfl.ModuleOf(reinterpret_cast<const void*>(&LocalFunction));
  ASSERT_NE(module, nullptr);
  const DwflSymbolIndex index(module);
  DwflSymbolIndex::Symbol symbol;
  ASSERT_EQ(index.Find(address + 1, &symbol), DwflSymbolIndex::Answer::kSized);
  EXPECT_NE(std::strstr(symbol.name, "LocalFunction"), nullptr) << symbol.name;
  EXPECT_EQ(symbol.value, address);
  EXPECT_EQ(LocalFunction(1), 4);
}

TEST(DwflSymbolIndexTest, NoModuleIndexesNothing) {
  const DwflSymbolIndex index(nullptr);
  DwflSymbolIndex::Symbol symbol;
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.Find(0x1000, &symbol), DwflSymbolIndex::Answer::kNone);
}

}  // namespace
}  // namespace deepcontext::native

// A sorted index of the symbols libdwfl reads for one module (.symtab, else
// .dynsym, plus a MiniDebugInfo table), for the libdw back end of the
// symbolizer. Built only with libdw.
//
// dwfl_module_addrinfo scans every symbol of the module per call (elfutils
// 0.188): with libdw, the first step of `deepcontext run --native` on the CPU
// training loop spent about 190 ms of its 210 ms there, on the application
// thread, naming the frames of its new paths in libtorch_cpu (33k symbols)
// one scan each. This index reads the table once per module, sorts it, and
// answers the same question in a binary search with the same rule.
#pragma once

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <vector>

namespace deepcontext::native {

class DwflSymbolIndex {
 public:
  // Reads every symbol of `module` (dwfl_module_getsym_info). An index of
  // nothing when the module has no symbol table.
  explicit DwflSymbolIndex(Dwfl_Module* module);

  enum class Answer : uint8_t {
    kSized,     // *symbol names the address, as dwfl_module_addrinfo would
    kNone,      // no symbol with a size covers it (nor starts at it)
    kAskLibdw,  // a symbol of size 0 starts exactly there: libdw's own rules
  };

  // A symbol with a size that covers the address: its name (mangled, as
  // stored, in libdwfl's memory while the Dwfl lives), address and size.
  struct Symbol {
    const char* name = nullptr;
    GElf_Addr value = 0;
    GElf_Xword size = 0;
  };

  // dwfl_module_addrinfo's choice among sized symbols: the globals (and
  // weak ones) are searched first, the locals only when no global has a
  // size covering `address`; within each, in table order, a symbol replaces
  // the one kept when it starts higher or binds more strongly (global over
  // weak over local). Sizeless symbols (assembly labels) it names only when
  // no sized one covers the address; as a name counts only when its symbol
  // covers the pc, those matter only when they start exactly at `address`,
  // and then the caller asks libdw (kAskLibdw). One difference is left: when
  // libdwfl read only a .dynsym found through the program headers (no file),
  // it searches locals and globals in one pass.
  Answer Find(GElf_Addr address, Symbol* symbol) const;

  size_t size() const { return sized_[0].entries.size() + sized_[1].entries.size(); }

  // Indexes built so far in this process: each reads and sorts a module's
  // whole table (5 ms for libtorch_cpu's 33k symbols).
  static uint64_t BuiltSoFar();

 private:
  struct Entry {
    GElf_Addr value;
    GElf_Addr end;  // value + size
    const char* name;
    uint32_t table_index;  // order in libdwfl's table: ties go by it
    uint8_t binding;       // 0 local, 1 weak, 2 global (higher wins)
  };
  // One search class (globals, then locals): sized symbols by address, with
  // the highest end among entries [0, i] at reach[i], so that the symbols
  // covering an address are found walking back from the last one that
  // starts at or below it; and the addresses of the sizeless ones.
  struct Class {
    std::vector<Entry> entries;
    std::vector<GElf_Addr> reach;
    std::vector<GElf_Addr> sizeless;
    void Seal();
    // The chosen covering entry, or nullptr.
    const Entry* Find(GElf_Addr address) const;
    bool SizelessAt(GElf_Addr address) const;
  };
  Class sized_[2];  // [0]: global and weak, [1]: local
};

}  // namespace deepcontext::native

#include "runtime/native/dwfl_symbol_index.h"

#include <algorithm>
#include <atomic>

namespace deepcontext::native {
namespace {

std::atomic<uint64_t> g_built{0};

// dwfl_module_addrsym's ranking of bindings: higher is better.
uint8_t BindingRank(const GElf_Sym& symbol) {
  switch (GELF_ST_BIND(symbol.st_info)) {
    case STB_GLOBAL:
      return 2;
    case STB_WEAK:
      return 1;
    default:
      return 0;
  }
}

// The symbols libdwfl considers for an address at all.
bool Considered(const char* name, const GElf_Sym& symbol) {
  const int type = GELF_ST_TYPE(symbol.st_info);
  return name != nullptr && name[0] != '\0' && symbol.st_shndx != SHN_UNDEF &&
         type != STT_SECTION && type != STT_FILE && type != STT_TLS;
}

}  // namespace

DwflSymbolIndex::DwflSymbolIndex(Dwfl_Module* module) {
  const int count = module != nullptr ? dwfl_module_getsymtab(module) : -1;
  // Entry 0 is the null symbol of the table.
  for (int i = 1; i < count; ++i) {
    GElf_Sym symbol;
    GElf_Addr value = 0;
    const char* name =
        dwfl_module_getsym_info(module, i, &symbol, &value, nullptr, nullptr, nullptr);
    if (!Considered(name, symbol)) continue;
    const uint8_t rank = BindingRank(symbol);
    Class& search = sized_[rank == 0 ? 1 : 0];
    if (symbol.st_size == 0) {
      search.sizeless.push_back(value);
    } else {
      search.entries.push_back(
          Entry{value, value + symbol.st_size, name, static_cast<uint32_t>(i), rank});
    }
  }
  for (Class& search : sized_) search.Seal();
  g_built.fetch_add(1, std::memory_order_relaxed);
}

uint64_t DwflSymbolIndex::BuiltSoFar() { return g_built.load(std::memory_order_relaxed); }

void DwflSymbolIndex::Class::Seal() {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.value != b.value ? a.value < b.value : a.table_index < b.table_index;
  });
  reach.resize(entries.size());
  GElf_Addr highest = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    highest = std::max(highest, entries[i].end);
    reach[i] = highest;
  }
  std::sort(sizeless.begin(), sizeless.end());
  sizeless.erase(std::unique(sizeless.begin(), sizeless.end()), sizeless.end());
  entries.shrink_to_fit();
  sizeless.shrink_to_fit();
}

const DwflSymbolIndex::Entry* DwflSymbolIndex::Class::Find(GElf_Addr address) const {
  // Entries [0, above) start at or below the address.
  const size_t above = static_cast<size_t>(
      std::upper_bound(entries.begin(), entries.end(), address,
                       [](GElf_Addr a, const Entry& e) { return a < e.value; }) -
      entries.begin());
  // The ones that cover it: usually one, or a function and its aliases.
  std::vector<const Entry*> covering;
  for (size_t i = above; i > 0 && reach[i - 1] > address; --i) {
    if (entries[i - 1].end > address) covering.push_back(&entries[i - 1]);
  }
  if (covering.empty()) return nullptr;
  // libdwfl's scan, in its table's order: which one it keeps can depend
  // on which it met first.
  std::sort(covering.begin(), covering.end(),
            [](const Entry* a, const Entry* b) { return a->table_index < b->table_index; });
  const Entry* kept = covering.front();
  for (size_t i = 1; i < covering.size(); ++i) {
    if (kept->value < covering[i]->value || kept->binding < covering[i]->binding) {
      kept = covering[i];
    }
  }
  return kept;
}

bool DwflSymbolIndex::Class::SizelessAt(GElf_Addr address) const {
  return std::binary_search(sizeless.begin(), sizeless.end(), address);
}

DwflSymbolIndex::Answer DwflSymbolIndex::Find(GElf_Addr address, Symbol* symbol) const {
  for (const Class& search : sized_) {
    if (const Entry* entry = search.Find(address)) {
      *symbol = Symbol{entry->name, entry->value, entry->end - entry->value};
      return Answer::kSized;
    }
    // libdwfl does not search the locals past a global label at the address.
    if (search.SizelessAt(address)) return Answer::kAskLibdw;
  }
  return Answer::kNone;
}

}  // namespace deepcontext::native

#include "runtime/native/dynamic_symbols.h"

#include <elf.h>
#include <link.h>

#include <algorithm>
#include <atomic>

namespace deepcontext::native {
namespace {

std::atomic<uint64_t> g_loads{0};

struct Found {
  uintptr_t bias;
  uintptr_t start;
  const ElfW(Dyn)* dynamic = nullptr;
  bool matched = false;
};

int FindObject(struct dl_phdr_info* info, size_t /*size*/, void* data) {
  auto* found = static_cast<Found*>(data);
  if (info->dlpi_addr != found->bias) return 0;
  uintptr_t lowest = UINTPTR_MAX;
  const ElfW(Dyn)* dynamic = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type == PT_LOAD) {
      lowest = std::min<uintptr_t>(lowest, info->dlpi_addr + header.p_vaddr);
    } else if (header.p_type == PT_DYNAMIC) {
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr +
                                                    header.p_vaddr);
    }
  }
  if (lowest != found->start) return 0;
  found->dynamic = dynamic;
  found->matched = true;
  return 1;
}

// The loader relocates most .dynamic pointers in place (glibc on x86-64 and
// AArch64), but not those of the vDSO: a value below the bias is a vaddr.
uintptr_t Pointer(uintptr_t value, uintptr_t bias) {
  return value < bias ? value + bias : value;
}

// Number of dynamic symbols from a GNU hash table: one past the highest
// symbol index its chains reach.
uint32_t CountFromGnuHash(const uint32_t* table) {
  const uint32_t buckets = table[0];
  const uint32_t first = table[1];
  const uint32_t bloom_words = table[2];
  const auto* bloom = reinterpret_cast<const ElfW(Addr)*>(table + 4);
  const uint32_t* bucket = reinterpret_cast<const uint32_t*>(bloom + bloom_words);
  const uint32_t* chain = bucket + buckets;
  uint32_t last = 0;
  for (uint32_t i = 0; i < buckets; ++i) last = std::max(last, bucket[i]);
  if (last < first) return first;
  while ((chain[last - first] & 1) == 0) ++last;
  return last + 1;
}

}  // namespace

std::unique_ptr<DynamicSymbols> DynamicSymbols::Load(uintptr_t bias,
                                                     uintptr_t start) {
  Found found{bias, start};
  dl_iterate_phdr(FindObject, &found);
  if (!found.matched || found.dynamic == nullptr) return nullptr;
  const ElfW(Sym)* symbols = nullptr;
  const char* strings = nullptr;
  uint64_t strings_size = 0;
  uint32_t count = 0;
  const uint32_t* gnu_hash = nullptr;
  for (const ElfW(Dyn)* entry = found.dynamic; entry->d_tag != DT_NULL;
       ++entry) {
    switch (entry->d_tag) {
      case DT_SYMTAB:
        symbols = reinterpret_cast<const ElfW(Sym)*>(
            Pointer(entry->d_un.d_ptr, bias));
        break;
      case DT_STRTAB:
        strings = reinterpret_cast<const char*>(Pointer(entry->d_un.d_ptr, bias));
        break;
      case DT_STRSZ:
        strings_size = entry->d_un.d_val;
        break;
      case DT_HASH:
        count = reinterpret_cast<const uint32_t*>(
            Pointer(entry->d_un.d_ptr, bias))[1];  // nchain
        break;
      case DT_GNU_HASH:
        gnu_hash = reinterpret_cast<const uint32_t*>(
            Pointer(entry->d_un.d_ptr, bias));
        break;
      default:
        break;
    }
  }
  if (count == 0 && gnu_hash != nullptr) count = CountFromGnuHash(gnu_hash);
  if (symbols == nullptr || strings == nullptr || count == 0) return nullptr;
  g_loads.fetch_add(1, std::memory_order_relaxed);

  auto index = std::unique_ptr<DynamicSymbols>(new DynamicSymbols());
  for (uint32_t i = 0; i < count; ++i) {
    const ElfW(Sym)& symbol = symbols[i];
    // dladdr's filter: no TLS, no absolute symbols, no undefined references
    // (an undefined symbol with a value is a PLT address, which counts).
    if ((symbol.st_info & 0xf) == STT_TLS) continue;  // ELF{32,64}_ST_TYPE
    if (symbol.st_shndx == SHN_ABS) continue;
    if (symbol.st_shndx == SHN_UNDEF && symbol.st_value == 0) continue;
    if (symbol.st_name >= strings_size) continue;
    const uintptr_t address = bias + symbol.st_value;
    const bool exact_only = symbol.st_shndx == SHN_UNDEF || symbol.st_size == 0;
    index->entries_.push_back(
        Entry{address, exact_only ? address + 1 : address + symbol.st_size, i,
              strings + symbol.st_name});
  }
  std::sort(index->entries_.begin(), index->entries_.end(),
            [](const Entry& a, const Entry& b) {
              return a.start != b.start ? a.start < b.start : a.index < b.index;
            });
  index->reach_.resize(index->entries_.size());
  uintptr_t reach = 0;
  for (size_t i = 0; i < index->entries_.size(); ++i) {
    reach = std::max(reach, index->entries_[i].end);
    index->reach_[i] = reach;
  }
  return index;
}

const char* DynamicSymbols::Find(uintptr_t address) const {
  auto after = std::upper_bound(
      entries_.begin(), entries_.end(), address,
      [](uintptr_t value, const Entry& entry) { return value < entry.start; });
  const Entry* match = nullptr;
  for (auto i = after - entries_.begin(); i > 0; --i) {
    const Entry& entry = entries_[i - 1];
    if (match != nullptr && entry.start != match->start) break;
    if (reach_[i - 1] <= address) break;  // nothing earlier reaches it
    if (entry.end > address) match = &entry;
  }
  return match != nullptr ? match->name : nullptr;
}

uint64_t DynamicSymbols::LoadsSoFar() {
  return g_loads.load(std::memory_order_relaxed);
}

}  // namespace deepcontext::native

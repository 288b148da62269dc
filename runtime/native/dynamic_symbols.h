// A sorted index of a loaded module's dynamic symbol table.
//
// dladdr answers by scanning every dynamic symbol of the module: about 1 ms
// per call in libtorch_cpu (30k+ exported symbols), paid by the application
// thread for each new frame it meets when libdw is absent (the GPU image).
// This index reads the same table once per module from memory, sorts it, and
// answers with dladdr's rule in a binary search: the symbol covering the
// address (st_size, or exactly its address when the size is 0) with the
// highest address, the lowest symbol index among equal addresses.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace deepcontext::native {

class DynamicSymbols {
 public:
  // Reads the dynamic symbols of the loaded object with load bias `bias`
  // whose mapping starts at `start` (as in ModuleMap). nullptr when no such
  // object is loaded now or it has no readable symbol table. Takes the
  // loader lock (dl_iterate_phdr); never call it from a signal handler.
  static std::unique_ptr<DynamicSymbols> Load(uintptr_t bias, uintptr_t start);

  // Name (mangled, as stored) of the symbol covering `address`, or nullptr.
  // The string lives in the module's string table, as long as it is loaded.
  const char* Find(uintptr_t address) const;

  size_t size() const { return entries_.size(); }

  // Tables read so far in this process (Load calls that found the object):
  // each reads and sorts a whole symbol table, tens of ms for libtorch.
  static uint64_t LoadsSoFar();

 private:
  struct Entry {
    uintptr_t start;
    uintptr_t end;  // start + size; start + 1 for a symbol of size 0
    uint32_t index;
    const char* name;
  };
  std::vector<Entry> entries_;   // by start, then index
  std::vector<uintptr_t> reach_;  // reach_[i] = max end of entries_[0..i]
};

}  // namespace deepcontext::native

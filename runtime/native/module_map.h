// A snapshot of the modules (executable, shared libraries) mapped into the
// process, so that raw pcs can be turned into (module, offset) pairs that
// stay meaningful after a library is unloaded or in another process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace deepcontext::native {

// One loaded ELF object.
struct Module {
  std::string path;      // absolute file path; the pseudo name for the vDSO
  uintptr_t bias = 0;    // load bias: runtime address = ELF vaddr + bias
  uintptr_t start = 0;   // lowest mapped address of its PT_LOAD segments
  uintptr_t end = 0;     // one past the highest
  std::string build_id;  // GNU build-id as lowercase hex; "" when absent
};

// Immutable, sorted list of modules.
class ModuleMap {
 public:
  ModuleMap() = default;

  // Takes a snapshot with dl_iterate_phdr. Allocates and takes the loader
  // lock: call it at start-up, after dlopen events or at exit, never from a
  // signal handler.
  static ModuleMap Snapshot();

  // Builds a map from explicit modules (tests, profiles read back).
  explicit ModuleMap(std::vector<Module> modules);

  // The module whose address range contains `address`, or nullptr.
  const Module* Find(uintptr_t address) const;

  const std::vector<Module>& modules() const { return modules_; }

 private:
  std::vector<Module> modules_;  // sorted by start
};

// Changes whenever the dynamic loader loads or unloads an object (glibc's
// dlpi_adds / dlpi_subs counters). Cheap: visits one module.
uint64_t LoaderGeneration();

// Objects the dynamic loader has unloaded so far (dlpi_subs). While it
// stays the same, every object seen loaded is still loaded where it was,
// with its symbol tables. Cheap: visits one module.
uint64_t LoaderUnloads();

// The file name part of a path ("libfoo.so" for "/usr/lib/libfoo.so").
std::string BaseName(const std::string& path);

}  // namespace deepcontext::native

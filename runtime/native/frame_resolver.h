// Thread-safe symbolization of return addresses for a long-running process.
//
// Symbolizer works on a fixed ModuleMap snapshot and is single-threaded.
// Call paths are built on any thread and libraries keep being loaded while a
// program runs (extensions, CUDA libraries), so this wrapper serializes the
// lookups and takes a new snapshot when a pc lies outside every module it
// knows. It runs only when a call path is seen for the first time, never per
// event.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/native/symbolizer.h"

namespace deepcontext::native {

class FrameResolver {
 public:
  FrameResolver();
  ~FrameResolver();
  FrameResolver(const FrameResolver&) = delete;
  FrameResolver& operator=(const FrameResolver&) = delete;

  // Symbolizes a return address (as captured: the lookup uses pc - 1).
  // [any thread] Allocates; takes the loader lock on a module refresh.
  SymbolizedFrame Resolve(uintptr_t pc);

  // The path of the module that holds a return address, as Resolve(pc).module
  // gives it ("" when none), without symbolizing: a module range lookup.
  // Building a new call path asks this of frames it does not name (the
  // reporting adapter's own, the GPU driver's), where symbolizing them, a
  // debug-info or symbol-table search each, was most of the path's cost.
  // [any thread]
  std::string ModuleOf(uintptr_t pc);

  // Snapshots taken since construction (the first one included).
  int snapshots();

  // "libdw" or "dladdr".
  const char* BackendName();

 private:
  // Takes a new snapshot when `pc` lies in no module of the current one and
  // libraries came or went since. Under mutex_.
  void RefreshFor(uintptr_t pc);

  std::mutex mutex_;
  std::unique_ptr<Symbolizer> symbolizer_;
  // The loader's load/unload counters when the snapshot was taken: a pc
  // outside every module (JIT code, anonymous mappings) only triggers a new
  // snapshot, which reads every module's headers, when a library came or
  // went since.
  uint64_t snapshot_generation_ = 0;
  int snapshots_ = 0;
};

}  // namespace deepcontext::native

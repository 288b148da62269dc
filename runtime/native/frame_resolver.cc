#include "runtime/native/frame_resolver.h"

#include <link.h>

namespace deepcontext::native {
namespace {

int ReadLoadGeneration(struct dl_phdr_info* info, size_t size, void* data) {
  // dlpi_adds / dlpi_subs exist since glibc 2.4; older headers say so by
  // a smaller size.
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    *static_cast<uint64_t*>(data) =
        static_cast<uint64_t>(info->dlpi_adds) * 0x100000001ull +
        static_cast<uint64_t>(info->dlpi_subs);
  }
  return 1;  // the counters are process-wide: the first module is enough
}

// Changes whenever a library is loaded or unloaded.
uint64_t LoadGeneration() {
  uint64_t generation = 0;
  dl_iterate_phdr(ReadLoadGeneration, &generation);
  return generation;
}

}  // namespace

FrameResolver::FrameResolver()
    : snapshot_generation_(LoadGeneration()) {
  symbolizer_ = std::make_unique<Symbolizer>(ModuleMap::Snapshot());
  snapshots_ = 1;
}

FrameResolver::~FrameResolver() = default;

SymbolizedFrame FrameResolver::Resolve(uintptr_t pc) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (pc != 0 && symbolizer_->modules().Find(pc - 1) == nullptr) {
    // Loaded after the snapshot: a new session over the current modules.
    // Per-pc results of the old one are cheap to recompute.
    const uint64_t generation = LoadGeneration();
    if (generation != snapshot_generation_) {
      snapshot_generation_ = generation;
      symbolizer_ = std::make_unique<Symbolizer>(ModuleMap::Snapshot());
      ++snapshots_;
    }
  }
  return symbolizer_->Symbolize(pc);
}

int FrameResolver::snapshots() {
  std::lock_guard<std::mutex> guard(mutex_);
  return snapshots_;
}

const char* FrameResolver::BackendName() {
  std::lock_guard<std::mutex> guard(mutex_);
  return symbolizer_->BackendName();
}

}  // namespace deepcontext::native

#include "runtime/native/frame_resolver.h"

namespace deepcontext::native {

FrameResolver::FrameResolver()
    : snapshot_generation_(LoaderGeneration()) {
  symbolizer_ = std::make_unique<Symbolizer>(ModuleMap::Snapshot());
  snapshots_ = 1;
}

FrameResolver::~FrameResolver() = default;

SymbolizedFrame FrameResolver::Resolve(uintptr_t pc) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (pc != 0 && symbolizer_->modules().Find(pc - 1) == nullptr) {
    // Loaded after the snapshot: a new session over the current modules.
    // Per-pc results of the old one are cheap to recompute.
    const uint64_t generation = LoaderGeneration();
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

#include "runtime/native/frame_resolver.h"

namespace deepcontext::native {

FrameResolver::FrameResolver()
    : symbolizer_(std::make_unique<Symbolizer>(ModuleMap::Snapshot())) {}

FrameResolver::~FrameResolver() = default;

SymbolizedFrame FrameResolver::Resolve(uintptr_t pc) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (pc != 0 && symbolizer_->modules().Find(pc - 1) == nullptr) {
    // Loaded after the snapshot: a new session over the current modules.
    // Per-pc results of the old one are cheap to recompute.
    ModuleMap modules = ModuleMap::Snapshot();
    if (modules.Find(pc - 1) != nullptr) {
      symbolizer_ = std::make_unique<Symbolizer>(std::move(modules));
    }
  }
  return symbolizer_->Symbolize(pc);
}

const char* FrameResolver::BackendName() {
  std::lock_guard<std::mutex> guard(mutex_);
  return symbolizer_->BackendName();
}

}  // namespace deepcontext::native

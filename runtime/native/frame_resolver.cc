#include "runtime/native/frame_resolver.h"

namespace deepcontext::native {

FrameResolver::FrameResolver()
    : snapshot_generation_(LoaderGeneration()) {
  symbolizer_ = std::make_unique<Symbolizer>(ModuleMap::Snapshot());
  snapshots_ = 1;
}

FrameResolver::~FrameResolver() = default;

void FrameResolver::RefreshFor(uintptr_t pc) {
  if (pc != 0 && symbolizer_->modules().Find(pc - 1) == nullptr) {
    // Loaded after the snapshot: a new session over the current modules,
    // which keeps the old one's symbol tables and answers unless a library
    // was unloaded since (reading libtorch's table again takes tens of ms).
    const uint64_t generation = LoaderGeneration();
    if (generation != snapshot_generation_) {
      snapshot_generation_ = generation;
      auto fresh = std::make_unique<Symbolizer>(ModuleMap::Snapshot());
      fresh->AdoptFrom(*symbolizer_);
      symbolizer_ = std::move(fresh);
      ++snapshots_;
    }
  }
}

SymbolizedFrame FrameResolver::Resolve(uintptr_t pc) {
  std::lock_guard<std::mutex> guard(mutex_);
  RefreshFor(pc);
  return symbolizer_->Symbolize(pc);
}

std::string FrameResolver::ModuleOf(uintptr_t pc) {
  std::lock_guard<std::mutex> guard(mutex_);
  RefreshFor(pc);
  // Symbolizer::Lookup names the module of the pc itself (not pc - 1).
  const Module* module = symbolizer_->modules().Find(pc);
  return module != nullptr ? module->path : std::string();
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

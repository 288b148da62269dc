#include "runtime/profiler/op_sample_log.h"

#include "runtime/common/deliberate_leak.h"

namespace deepcontext::profiler {

std::shared_ptr<OpSampleRing> OpSampleLog::Register() {
  auto ring = std::make_shared<OpSampleRing>();
  std::lock_guard<std::mutex> guard(rings_->mutex);
  rings_->list.push_back(ring);
  return ring;
}

size_t OpSampleLog::rings() const {
  std::lock_guard<std::mutex> guard(rings_->mutex);
  return rings_->list.size();
}

void OpSampleLog::ResetAfterFork() {
  // Abandoned, not destroyed: destroying a mutex another thread held at
  // the fork is undefined. The parent's rings stay with it (32 KiB each,
  // pages the child shares with the parent and never writes).
  MarkDeliberatelyLeaked(rings_.release());
  rings_ = std::make_unique<Rings>();
}

}  // namespace deepcontext::profiler

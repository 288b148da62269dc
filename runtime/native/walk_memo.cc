#include "runtime/native/walk_memo.h"

#include <atomic>

namespace deepcontext::native::internal {
namespace {

std::atomic<uint64_t> g_published{0};
std::atomic<uint64_t> g_replayed{0};
std::atomic<uint64_t> g_stepped{0};

}  // namespace

uint64_t WalkMemo::IndexOf(const WalkState& state) {
  const uint64_t mixed = state.pc * 0x9E3779B97F4A7C15ull ^ state.sp * 0xC2B2AE3D27D4EB4Full;
  return mixed >> (64 - kIndexBits);
}

const WalkStep* WalkMemo::Find(const WalkState& start, int* count) const {
  const IndexSlot& slot = index_[IndexOf(start)];
  // Overwritten once the ring moved a whole turn past its first step.
  if (slot.count == 0 || !(slot.start == start) || written_ - slot.position > kRingSteps) {
    return nullptr;
  }
  *count = slot.count;
  return &ring_[slot.position % kRingSteps];
}

void WalkMemo::Commit() {
  recording_ = false;
  if (recorded_ == 0) return;
  // Segments never wrap around the ring's end: replay reads them in one run.
  if (written_ % kRingSteps + recorded_ > kRingSteps) {
    written_ += kRingSteps - written_ % kRingSteps;
  }
  const uint64_t position = written_;
  WalkStep* out = &ring_[position % kRingSteps];
  for (int i = 0; i < recorded_; ++i) out[i] = recorded_steps_[i];
  written_ += recorded_;
  IndexSlot& slot = index_[IndexOf(recording_start_)];
  slot.start = recording_start_;
  slot.position = position;
  slot.count = recorded_;
  recorded_ = 0;
  ++published_;
  g_published.fetch_add(1, std::memory_order_relaxed);
}

void WalkMemo::Flush() {
  g_replayed.fetch_add(steps_replayed_ - flushed_replayed_, std::memory_order_relaxed);
  g_stepped.fetch_add(steps_stepped_ - flushed_stepped_, std::memory_order_relaxed);
  flushed_replayed_ = steps_replayed_;
  flushed_stepped_ = steps_stepped_;
}

WalkMemoCounters WalkMemoTotals() {
  return WalkMemoCounters{g_published.load(std::memory_order_relaxed),
                          g_replayed.load(std::memory_order_relaxed),
                          g_stepped.load(std::memory_order_relaxed)};
}

}  // namespace deepcontext::native::internal

#include "runtime/native/walk_memo.h"

#include <atomic>

#include "runtime/common/hot_path.h"

namespace deepcontext::native::internal {
namespace {

std::atomic<uint64_t> g_published{0};
std::atomic<uint64_t> g_replayed{0};
std::atomic<uint64_t> g_stepped{0};

}  // namespace

uint64_t WalkMemo::SetOf(const WalkState& state) {
  const uint64_t mixed = state.pc * 0x9E3779B97F4A7C15ull ^ state.sp * 0xC2B2AE3D27D4EB4Full;
  return (mixed >> (64 - kIndexBits)) & ~static_cast<uint64_t>(kWays - 1);
}

DEEPCONTEXT_HOT
const WalkStep* WalkMemo::Find(const WalkState& start, int* count) const {
  const IndexSlot* set = &index_[SetOf(start)];
  for (int way = 0; way < kWays; ++way) {
    const IndexSlot& slot = set[way];
    // Overwritten once the ring moved a whole turn past its first step.
    if (slot.start == start && Holds(slot)) {
      *count = slot.count;
      return &ring_[slot.position % kRingSteps];
    }
  }
  return nullptr;
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
  // In its set: the slot of an earlier segment from the same start (it
  // diverged since), else a slot the ring no longer holds, else the
  // oldest segment, which the ring would drop first anyway.
  IndexSlot* set = &index_[SetOf(recording_start_)];
  IndexSlot* slot = nullptr;
  for (int way = 0; way < kWays && slot == nullptr; ++way) {
    if (set[way].count != 0 && set[way].start == recording_start_) slot = &set[way];
  }
  if (slot == nullptr) {
    slot = &set[0];
    for (int way = 1; way < kWays && Holds(*slot); ++way) {
      if (!Holds(set[way]) || set[way].position < slot->position) slot = &set[way];
    }
  }
  slot->start = recording_start_;
  slot->position = position;
  slot->count = recorded_;
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

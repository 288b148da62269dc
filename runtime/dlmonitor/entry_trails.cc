#include "runtime/dlmonitor/entry_trails.h"

#include "runtime/common/hot_path.h"
#include "runtime/dlmonitor/trail_ways.h"

namespace deepcontext::dlmonitor {

int EntryTrails::SetOf(const Key& key) {
  uint64_t h = key.cfa * 0x9E3779B97F4A7C15ULL ^ (key.pc << 17) ^
               (static_cast<uint64_t>(key.previous) << 40);
  h *= 0xBF58476D1CE4E5B9ULL;
  return static_cast<int>((h >> (64 - kSetBits)) * kWays);
}

DEEPCONTEXT_HOT
native::StackId EntryTrails::Replay(const Key& key, const native::CallerFrame& start,
                                    const native::StackAnchor& previous, uintptr_t* pcs,
                                    uintptr_t* sps, int* count, int* copied) {
  const int way = HoldingTrailWay(entries_, trails_, SetOf(key), kWays, key, start, previous,
                                  &tick_, /*had_trail=*/nullptr);
  if (way < 0) return native::kNoStack;
  // The trail's frames but its last two (the previous capture's met + 1
  // and met), innermost first, go after the previous capture's [0, met + 1].
  const native::StackTrailFrames& frames = frames_[way];
  const int outer = trails_[way].met + 2;
  const int inner = frames.count - 2;
  const int total = outer + inner;
  for (int i = 0; i < inner; ++i) {
    pcs[total - 1 - i] = frames.pcs[i];
    sps[total - 1 - i] = frames.sps[i];
  }
  *count = total;
  *copied = outer;
  return entries_[way].stack;
}

bool EntryTrails::Keep(const Key& key, native::StackId stack, const native::CallerFrame& start,
                       const uintptr_t* pcs, const uintptr_t* sps, int count, int copied) {
  if (stack == native::kNoStack || copied < 2 || copied >= count) return false;
  int victim = 0;
  const TrailClaim claim = ClaimTrailWay(entries_, trails_, SetOf(key), kWays, key,
                                         kRecordMarkedEvery, &tick_, &victim);
  if (claim == TrailClaim::kMarked) return false;
  Entry& entry = entries_[victim];
  entry.stack = native::kNoStack;
  if (claim == TrailClaim::kFirstSight) return false;
  native::StackTrail& trail = trails_[victim];
  native::StackTrailFrames& frames = frames_[victim];
  // The previous capture as the capture kept it: its first `copied` frames.
  const native::StackAnchor met{pcs, sps, copied, /*live=*/false};
  const bool kept =
      native::RecordStackTrail(start, met, &trail, &frames) ==
          native::StackTrailRecord::kRecorded &&
      native::StackTrailDescribes(trail, frames, met, pcs, sps, count);
  if (!kept) trail.words = 0;
  entry.stack = kept ? stack : native::kNoStack;
  return kept;
}

}  // namespace deepcontext::dlmonitor

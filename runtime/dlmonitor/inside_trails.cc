#include "runtime/dlmonitor/inside_trails.h"

#include "runtime/common/hot_path.h"
#include "runtime/native/capture_stats.h"

namespace deepcontext::dlmonitor {

int InsideTrails::SetOf(const Key& key) {
  uint64_t h = key.op * 0x9E3779B97F4A7C15ULL ^ key.cfa ^ (key.pc << 17) ^
               (static_cast<uint64_t>(key.entry) << 40);
  h *= 0xBF58476D1CE4E5B9ULL;
  return static_cast<int>((h >> (64 - kSetBits)) * kWays);
}

DEEPCONTEXT_HOT
ContextId InsideTrails::Answer(const Key& key, const native::CallerFrame& start,
                               const native::StackAnchor& anchor) {
  const int set = SetOf(key);
  bool had_trail = false;
  for (int way = 0; way < kWays; ++way) {
    Entry& entry = entries_[set + way];
    if (entry.used == 0 || !(entry.key == key)) continue;
    if (native::StackTrailHolds(trails_[set + way], start, anchor)) {
      if (++tick_ == 0) tick_ = 1;
      entry.used = tick_;
      return entry.answer;
    }
    had_trail |= trails_[set + way].words > 0;
  }
  if (had_trail && native::CaptureStatsEnabled()) [[unlikely]] {
    native::RecordTrailOutcome(native::TrailOutcome::kDidNotHold);
  }
  return kNoContext;
}

bool InsideTrails::Keep(const Key& key, ContextId answer, const native::CallerFrame& start,
                        const native::StackAnchor& anchor, const uintptr_t* pcs,
                        const uintptr_t* sps, int count) {
  if (answer == kNoContext) return false;
  const int set = SetOf(key);
  int victim = set;
  bool seen = false;
  for (int way = 0; way < kWays; ++way) {
    Entry& entry = entries_[set + way];
    if (entry.used != 0 && entry.key == key && trails_[set + way].words == 0) {
      // Seen once, or marked: recorded again only once in a while, in case
      // what kept its first trail from being recorded has passed.
      if (++entry.skipped < kRecordMarkedEvery) {
        if (native::CaptureStatsEnabled()) {
          native::RecordTrailOutcome(native::TrailOutcome::kMarked);
        }
        return false;
      }
      victim = set + way;
      seen = true;
      break;
    }
    if (entry.used < entries_[victim].used) victim = set + way;
  }
  if (++tick_ == 0) tick_ = 1;
  Entry& entry = entries_[victim];
  entry.key = key;
  entry.used = tick_;
  entry.skipped = 0;
  native::StackTrail& trail = trails_[victim];
  if (!seen) {
    // First sight: an entry without a trail, recorded at the key's next
    // unwound call. A key that does not come back before it is replaced
    // (more keys than entries, a program of many call sites) then costs
    // no recording at all.
    trail.words = 0;
    entry.answer = kNoContext;
    entry.skipped = kRecordMarkedEvery - 1;
    return false;
  }
  native::StackTrailFrames frames;
  const native::StackTrailRecord record =
      native::RecordStackTrail(start, anchor, &trail, &frames);
  const bool recorded = record == native::StackTrailRecord::kRecorded &&
                        native::StackTrailDescribes(trail, frames, anchor, pcs, sps, count);
  if (!recorded) trail.words = 0;
  if (native::CaptureStatsEnabled()) {
    native::RecordTrailOutcome(
        recorded ? native::TrailOutcome::kKept
        : record == native::StackTrailRecord::kRecorded ? native::TrailOutcome::kOtherStack
        : record == native::StackTrailRecord::kTooLong  ? native::TrailOutcome::kTooLong
                                                        : native::TrailOutcome::kFailed);
  }
  entry.answer = recorded ? answer : kNoContext;
  return recorded;
}

}  // namespace deepcontext::dlmonitor

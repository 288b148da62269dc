#include "runtime/dlmonitor/inside_trails.h"

#include "runtime/common/hot_path.h"
#include "runtime/dlmonitor/trail_ways.h"
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
  bool had_trail = false;
  const int way = HoldingTrailWay(entries_, trails_, SetOf(key), kWays, key, start, anchor,
                                  &tick_, &had_trail);
  if (way >= 0) return entries_[way].answer;
  if (had_trail && native::CaptureStatsEnabled()) [[unlikely]] {
    native::RecordTrailOutcome(native::TrailOutcome::kDidNotHold);
  }
  return kNoContext;
}

bool InsideTrails::Keep(const Key& key, ContextId answer, const native::CallerFrame& start,
                        const native::StackAnchor& anchor, const uintptr_t* pcs,
                        const uintptr_t* sps, int count) {
  if (answer == kNoContext) return false;
  int victim = 0;
  const TrailClaim claim = ClaimTrailWay(entries_, trails_, SetOf(key), kWays, key,
                                         kRecordMarkedEvery, &tick_, &victim);
  if (claim == TrailClaim::kMarked) {
    if (native::CaptureStatsEnabled()) native::RecordTrailOutcome(native::TrailOutcome::kMarked);
    return false;
  }
  Entry& entry = entries_[victim];
  entry.answer = kNoContext;
  if (claim == TrailClaim::kFirstSight) return false;
  native::StackTrail& trail = trails_[victim];
  native::StackTrailFrames frames;
  const native::StackTrailRecord record =
      native::RecordStackTrail(start, anchor, &trail, &frames);
  const bool recorded = record == native::StackTrailRecord::kRecorded &&
                        native::StackTrailDescribes(trail, frames, anchor, pcs, sps, count);
  if (!recorded) trail.words = 0;
  if (native::CaptureStatsEnabled()) {
    native::RecordTrailOutcome(
        recorded ? native::TrailOutcome::kKept
        : record == native::StackTrailRecord::kRecorded     ? native::TrailOutcome::kOtherStack
        : record == native::StackTrailRecord::kTooManySteps ? native::TrailOutcome::kTooManySteps
        : record == native::StackTrailRecord::kTooManyWords ? native::TrailOutcome::kTooManyWords
                                                            : native::TrailOutcome::kFailed);
  }
  entry.answer = recorded ? answer : kNoContext;
  return recorded;
}

}  // namespace deepcontext::dlmonitor

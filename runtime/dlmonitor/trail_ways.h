// How a table of trails (inside_trails.h, entry_trails.h) finds a key's
// trail that holds, and where it keeps a key that an unwind just answered:
// sets of ways, least recently used replaced. A key's first sight keeps an
// entry without a trail and records nothing: keys that do not come back
// before they are replaced (a program with more of them than the table
// holds) cost no recording. At its next unwound sight the trail is
// recorded. An entry left without a trail because none could be recorded
// (marked) is recorded again only every `every`-th sight, in case what kept
// it from being recorded has passed.
#pragma once

#include <cstdint>

#include "runtime/native/stack_trail.h"

namespace deepcontext::dlmonitor {

enum class TrailClaim : uint8_t {
  kRecord,      // record the trail at the way given
  kFirstSight,  // the key now has a way, without a trail: record nothing
  kMarked,      // a way of the key says none can be recorded now
};

// The way of `key` among `ways` from `set` whose trail holds from `start`
// to `anchor` (native::StackTrailHolds), its use made the latest; -1 when
// none does. `*had_trail`, where given, is set when a way of the key had a
// trail that did not hold. Inlined into each table's lookup, a hot path.
template <typename Entry, typename Key>
[[gnu::always_inline]] inline int HoldingTrailWay(Entry* entries,
                                                  const native::StackTrail* trails, int set,
                                                  int ways, const Key& key,
                                                  const native::CallerFrame& start,
                                                  const native::StackAnchor& anchor,
                                                  uint32_t* tick, bool* had_trail) {
  for (int w = set; w < set + ways; ++w) {
    Entry& entry = entries[w];
    if (entry.used == 0 || !(entry.key == key)) continue;
    if (native::StackTrailHolds(trails[w], start, anchor)) {
      if (++*tick == 0) *tick = 1;
      entry.used = *tick;
      return w;
    }
    if (had_trail != nullptr && trails[w].words > 0) *had_trail = true;
  }
  return -1;
}

// Entries have `key`, `used` (tick of the last use, 0: empty) and
// `skipped` (sights not recorded since the entry was left without a
// trail). Sets the way's key, use and count, and clears its trail on a
// first sight; `*way` is the entry's index.
template <typename Entry, typename Key>
TrailClaim ClaimTrailWay(Entry* entries, native::StackTrail* trails, int set, int ways,
                         const Key& key, uint32_t every, uint32_t* tick, int* way) {
  int victim = set;
  bool seen = false;
  for (int w = set; w < set + ways; ++w) {
    Entry& entry = entries[w];
    if (entry.used != 0 && entry.key == key && trails[w].words == 0) {
      if (++entry.skipped < every) return TrailClaim::kMarked;
      victim = w;
      seen = true;
      break;
    }
    if (entry.used < entries[victim].used) victim = w;
  }
  if (++*tick == 0) *tick = 1;
  Entry& entry = entries[victim];
  entry.key = key;
  entry.used = *tick;
  entry.skipped = seen ? 0 : every - 1;
  *way = victim;
  if (seen) return TrailClaim::kRecord;
  trails[victim].words = 0;
  return TrailClaim::kFirstSight;
}

}  // namespace deepcontext::dlmonitor

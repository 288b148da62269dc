// Length of the union of time intervals that arrive roughly, not strictly,
// in time order (kernel records of several streams), in bounded memory.
// Used for per-device GPU busy time: busy = union of kernel intervals, so
// concurrent kernels are not counted twice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

namespace deepcontext::gpu {

class IntervalUnion {
 public:
  // Keeps at most `window` disjoint intervals open for merging; older ones
  // are folded into a committed total. Intervals that start before the
  // folded part are clipped to it, so the result stays exact as long as
  // records are not more than `window` intervals out of order.
  explicit IntervalUnion(size_t window = 4096) : window_(window) {}

  // Adds [start, end). Empty or inverted intervals are ignored.
  void Add(uint64_t start, uint64_t end);
  // Total length of the union so far.
  uint64_t Length() const;
  // Earliest start and latest end seen (0 when empty).
  uint64_t first_start() const { return first_start_; }
  uint64_t last_end() const { return last_end_; }
  // Number of intervals added (not merged).
  uint64_t count() const { return count_; }

 private:
  size_t window_;
  std::map<uint64_t, uint64_t> open_;  // start -> end, disjoint, not touching
  uint64_t committed_ = 0;   // length of intervals folded out of open_
  uint64_t watermark_ = 0;   // nothing before this can be added any more
  uint64_t first_start_ = 0;
  uint64_t last_end_ = 0;
  uint64_t count_ = 0;
};

}  // namespace deepcontext::gpu

#include "runtime/gpu/interval_union.h"

#include <algorithm>
#include <iterator>

namespace deepcontext::gpu {

void IntervalUnion::Add(uint64_t start, uint64_t end) {
  if (end <= start) return;
  if (count_ == 0 || start < first_start_) first_start_ = start;
  last_end_ = std::max(last_end_, end);
  ++count_;
  start = std::max(start, watermark_);
  if (end <= start) return;  // entirely inside the folded past

  // Merge with every open interval that overlaps or touches [start, end).
  auto it = open_.upper_bound(start);
  if (it != open_.begin()) {
    auto before = std::prev(it);
    if (before->second >= start) it = before;
  }
  while (it != open_.end() && it->first <= end) {
    start = std::min(start, it->first);
    end = std::max(end, it->second);
    it = open_.erase(it);
  }
  open_.emplace(start, end);

  while (open_.size() > window_) {
    auto oldest = open_.begin();
    committed_ += oldest->second - oldest->first;
    watermark_ = oldest->second;
    open_.erase(oldest);
  }
}

uint64_t IntervalUnion::Length() const {
  uint64_t total = committed_;
  for (const auto& [start, end] : open_) total += end - start;
  return total;
}

}  // namespace deepcontext::gpu

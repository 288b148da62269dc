// The median of a benchmark's per-round results: robust to the odd round a
// shared machine slows down.
#pragma once

#include <algorithm>
#include <vector>

namespace deepcontext::bench {

inline double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace deepcontext::bench

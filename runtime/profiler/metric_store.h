// Online aggregation of metrics per calling context: for every (context,
// metric) pair seen, the number of samples and their sum, min and max. No
// per-event record is kept, so memory grows with the number of distinct
// contexts, not with run time.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "runtime/common/chunked_array.h"
#include "runtime/common/spin_lock.h"

namespace deepcontext::profiler {

using MetricId = uint32_t;
using ContextId = uint64_t;

struct Accumulator {
  uint64_t count = 0;
  double sum = 0;
  double min = 0;
  double max = 0;

  void Add(double value) {
    if (count == 0 || value < min) min = value;
    if (count == 0 || value > max) max = value;
    sum += value;
    ++count;
  }
  // As if other's values had been added one by one.
  void Merge(const Accumulator& other) {
    if (other.count == 0) return;
    if (count == 0 || other.min < min) min = other.min;
    if (count == 0 || other.max > max) max = other.max;
    sum += other.sum;
    count += other.count;
  }
};

struct MetricInfo {
  std::string name;
  std::string unit;
  std::string description;
};

class MetricStore {
 public:
  // Registers a metric (idempotent by name) and returns its id. [any thread]
  MetricId Register(const std::string& name, const std::string& unit,
                    const std::string& description);
  std::vector<MetricInfo> Metrics() const;

  // Adds one sample. [any thread] Lock-free except for a per-context
  // spinlock held for a few instructions.
  void Add(ContextId context, MetricId metric, double value);
  // Adds one sample to each metric under a single lock (an op's exit
  // records several at once).
  using Sample = std::pair<MetricId, double>;
  void Add(ContextId context, std::span<const Sample> samples);
  void Add(ContextId context, std::initializer_list<Sample> samples) {
    Add(context, std::span<const Sample>(samples.begin(), samples.size()));
  }

  // Replaces the samples of (context, metric) by the single value: for
  // gauges computed from a whole run (live bytes at the peak), which are
  // recomputed before each write. [any thread]
  void Set(ContextId context, MetricId metric, double value);
  // Replaces them by samples accumulated elsewhere. [any thread]
  void Set(ContextId context, MetricId metric, const Accumulator& samples);
  // Forgets the samples of (context, metric). [any thread]
  void Remove(ContextId context, MetricId metric);

  // Calls visit(context, metric, accumulator) for every pair with samples,
  // in context order. Safe while other threads keep adding.
  template <typename Visitor>
  void ForEach(ContextId end, Visitor&& visit) const {
    for (ContextId context = 0; context < end; ++context) {
      Slot* slot = slots_.At(context);
      if (slot == nullptr) {
        context |= kChunkMask;  // whole chunk absent: skip it
        continue;
      }
      std::vector<std::pair<MetricId, Accumulator>> copy;
      {
        std::lock_guard<SpinLock> guard(slot->lock);
        copy = slot->values;
      }
      for (const auto& [metric, accumulator] : copy) {
        if (accumulator.count > 0) visit(context, metric, accumulator);
      }
    }
  }

  // Forgets every sample (metric ids stay). Used in a forked child, whose
  // profile must not repeat its parent's numbers.
  void Clear(ContextId end);

 private:
  struct Slot {
    SpinLock lock;  // guards values
    std::vector<std::pair<MetricId, Accumulator>> values;

    // The accumulator of `metric`, appended empty on first use. [lock held]
    Accumulator& Of(MetricId metric);
    // Once per (context, metric): out of the op path
    // (runtime/common/hot_path.h). [lock held]
    [[gnu::noinline, gnu::cold]] Accumulator& Append(MetricId metric);
  };
  static constexpr ContextId kChunkMask = (ContextId{1} << 12) - 1;

  mutable std::mutex metrics_mutex_;  // guards metrics_
  std::vector<MetricInfo> metrics_;
  mutable ChunkedArray<Slot> slots_;
};

}  // namespace deepcontext::profiler

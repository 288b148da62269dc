#include "runtime/profiler/metric_store.h"

#include "runtime/common/hot_path.h"

namespace deepcontext::profiler {

MetricId MetricStore::Register(const std::string& name,
                               const std::string& unit,
                               const std::string& description) {
  std::lock_guard<std::mutex> guard(metrics_mutex_);
  for (size_t i = 0; i < metrics_.size(); ++i) {
    if (metrics_[i].name == name) return static_cast<MetricId>(i);
  }
  metrics_.push_back(MetricInfo{name, unit, description});
  return static_cast<MetricId>(metrics_.size() - 1);
}

std::vector<MetricInfo> MetricStore::Metrics() const {
  std::lock_guard<std::mutex> guard(metrics_mutex_);
  return metrics_;
}

DEEPCONTEXT_HOT
Accumulator& MetricStore::Slot::Of(MetricId metric) {
  for (auto& [id, accumulator] : values) {
    if (id == metric) return accumulator;
  }
  return Append(metric);
}

Accumulator& MetricStore::Slot::Append(MetricId metric) {
  return values.emplace_back(metric, Accumulator{}).second;
}

DEEPCONTEXT_HOT
void MetricStore::Add(ContextId context, MetricId metric, double value) {
  Slot* slot = slots_.Ensure(context);
  if (slot == nullptr) return;
  std::lock_guard<SpinLock> guard(slot->lock);
  slot->Of(metric).Add(value);
}

DEEPCONTEXT_HOT
void MetricStore::Add(ContextId context, std::span<const Sample> samples) {
  Slot* slot = slots_.Ensure(context);
  if (slot == nullptr) return;
  std::lock_guard<SpinLock> guard(slot->lock);
  for (const auto& [metric, value] : samples) slot->Of(metric).Add(value);
}

void MetricStore::Set(ContextId context, MetricId metric, double value) {
  Accumulator single;
  single.Add(value);
  Set(context, metric, single);
}

void MetricStore::Set(ContextId context, MetricId metric, const Accumulator& samples) {
  Slot* slot = slots_.Ensure(context);
  if (slot == nullptr) return;
  std::lock_guard<SpinLock> guard(slot->lock);
  slot->Of(metric) = samples;
}

void MetricStore::Remove(ContextId context, MetricId metric) {
  Slot* slot = slots_.At(context);
  if (slot == nullptr) return;
  std::lock_guard<SpinLock> guard(slot->lock);
  std::erase_if(slot->values,
                [metric](const auto& entry) { return entry.first == metric; });
}

void MetricStore::Clear(ContextId end) {
  for (ContextId context = 0; context < end; ++context) {
    Slot* slot = slots_.At(context);
    if (slot == nullptr) {
      context |= kChunkMask;
      continue;
    }
    std::lock_guard<SpinLock> guard(slot->lock);
    slot->values.clear();
  }
}

}  // namespace deepcontext::profiler

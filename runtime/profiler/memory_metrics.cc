#include "runtime/profiler/memory_metrics.h"

#include <sched.h>

#include <algorithm>
#include <mutex>  // std::lock_guard

#include "runtime/common/hot_path.h"

namespace deepcontext::profiler {

MemoryMetrics::MemoryMetrics(MetricStore& store) : store_(store) {}

DEEPCONTEXT_HOT
void MemoryMetrics::OnEvent(const dlmonitor_event_t* event, void* user_data) {
  if (event->domain != DLMONITOR_DOMAIN_MEMORY || event->memory == nullptr) {
    return;
  }
  const dlmonitor_memory_data_t& memory = *event->memory;
  if (memory.bytes == 0) return;
  static_cast<MemoryMetrics*>(user_data)->Record(
      memory.device, reinterpret_cast<uint64_t>(memory.address), memory.bytes,
      event->context, dlmonitor_memory_flags(&memory));
}

const MemoryMetrics::KindMetrics& MemoryMetrics::MetricsFor(int32_t device) {
  const bool host = device < 0;
  std::optional<KindMetrics>& ids = metrics_[host ? 1 : 0];
  if (ids.has_value()) return *ids;
  const std::string kind = host ? "host" : "gpu";
  const std::string where = host ? "host" : "GPU";
  ids = KindMetrics{
      store_.Register(kind + "_alloc_bytes", "bytes",
                      where + " memory allocated here (count = allocations)"),
      store_.Register(kind + "_peak_live_bytes", "bytes",
                      where + " memory allocated here and still live when "
                              "its device's allocated memory peaked")};
  return *ids;
}

MemoryMetrics::DeviceState& MemoryMetrics::StateOf(int32_t device) {
  if (last_state_ == nullptr || last_device_ != device) {
    last_state_ = &devices_[device];
    last_device_ = device;
  }
  return *last_state_;
}

MemoryMetrics::ContextLive& MemoryMetrics::LiveOf(DeviceState& state,
                                                  ContextId context) {
  if (state.last_live != nullptr && state.last_context == context) {
    return *state.last_live;
  }
  ContextLive*& slot = state.live_by_context[context];
  if (slot == nullptr) [[unlikely]] {
    // Absent at the last peak left: it held nothing then.
    slot = &state.live_entries.emplace_back(
        ContextLive{context, 0, 0, state.peak_epoch, Accumulator{}});
  }
  state.last_context = context;
  state.last_live = slot;
  return *slot;
}

void MemoryMetrics::AddLive(const DeviceState& state, ContextLive& entry,
                            int64_t bytes) {
  if (entry.epoch != state.peak_epoch) {
    entry.at_peak = entry.live;  // its first change since that peak
    entry.epoch = state.peak_epoch;
  }
  entry.live += bytes;
}

void MemoryMetrics::Free(DeviceState& state, const Allocation& allocation) {
  if (state.at_new_peak) {
    // Leaving a new peak: this is the moment to remember who held it.
    ++state.peak_epoch;
    state.at_new_peak = false;
  }
  state.live -= allocation.bytes;
  ++state.frees;
  // An emptied entry stays: the context allocates again soon (a temporary
  // per op), and the map is bounded by the contexts that ever allocated.
  AddLive(state, *allocation.live, -allocation.bytes);
}

void MemoryMetrics::RecordReserved(DeviceState& state, uint64_t address,
                                   int64_t bytes, bool preexisting) {
  state.reserved_seen = true;
  if (bytes > 0) {
    // A segment both in the start snapshot and seen reserved after the
    // hook was attached is counted once.
    if (!state.reserved_ranges.emplace(address, bytes).second) {
      if (preexisting) return;
      state.reserved -= state.reserved_ranges[address];
      state.reserved_ranges[address] = bytes;
    }
    state.reserved += bytes;
    state.reserved_peak = std::max(state.reserved_peak, state.reserved);
    return;
  }
  // Expandable segments unmap parts of a mapping: the released size is what
  // the event says, whatever range it started in.
  state.reserved_ranges.erase(address);
  state.reserved = std::max<int64_t>(0, state.reserved + bytes);
}

DEEPCONTEXT_HOT
void MemoryMetrics::Record(int32_t device, uint64_t address, int64_t bytes,
                           ContextId context, uint32_t flags) {
  const MemoryEvent event{address, bytes, context, device, flags};
  while (!queue_.TryPush(event)) [[unlikely]] {
    // Nobody drained in time (no sampler thread: CPU time exact or off).
    // The events before this one must be accounted for first, so it waits
    // for its turn in the queue rather than being applied now; it may
    // have to wait for another producer still writing its event.
    if (Drain() == 0) sched_yield();
  }
}

size_t MemoryMetrics::Drain() {
  std::lock_guard<SpinLock> guard(lock_);
  return DrainLocked();
}

size_t MemoryMetrics::DrainLocked() {
  return queue_.Drain([this](const MemoryEvent& event) { Apply(event); });
}

void MemoryMetrics::Apply(const MemoryEvent& event) {
  const int32_t device = event.device;
  const uint64_t address = event.address;
  const int64_t bytes = event.bytes;
  const ContextId context = event.context;
  const uint32_t flags = event.flags;
  DeviceState& state = StateOf(device);
  if ((flags & DLMONITOR_MEMORY_RESERVED) != 0) {
    RecordReserved(state, address, bytes,
                   (flags & DLMONITOR_MEMORY_PREEXISTING) != 0);
    return;
  }
  const bool preexisting = (flags & DLMONITOR_MEMORY_PREEXISTING) != 0;
  Allocation* found = allocations_.Find(device, address);
  if (bytes < 0) {
    if (found == nullptr) {
      ++unmatched_frees_;
      return;
    }
    Free(state, *found);
    allocations_.Erase(found);
    return;
  }
  MetricsFor(device);  // the kind's metrics exist from its first allocation on
  if (preexisting && found != nullptr) return;  // seen allocated
  // The free of the previous block here was never reported.
  if (found != nullptr) Free(state, *found);
  ContextLive& live = LiveOf(state, context);
  if (found != nullptr) {
    *found = Allocation{bytes, &live};
  } else {
    allocations_.Insert(device, address, Allocation{bytes, &live});
  }
  if (preexisting) {
    state.live_before_profiling += bytes;
  } else {
    ++state.allocations;
  }
  state.live += bytes;
  AddLive(state, live, bytes);
  if (state.live > state.peak) {
    state.peak = state.live;
    state.at_new_peak = true;
  }
  if (context != 0 && !preexisting) live.allocated.Add(static_cast<double>(bytes));
}

void MemoryMetrics::Publish() {
  std::lock_guard<SpinLock> guard(lock_);
  DrainLocked();
  for (const auto& [context, metric] : published_) store_.Remove(context, metric);
  published_.clear();
  // Devices of one kind share its metrics: their allocations add up.
  std::map<std::pair<ContextId, MetricId>, Accumulator> allocated;
  for (const auto& [device, state] : devices_) {
    const KindMetrics& ids = MetricsFor(device);
    for (const ContextLive& entry : state.live_entries) {
      const ContextId context = entry.context;
      if (context == 0) continue;
      if (entry.allocated.count > 0) {
        allocated[{context, ids.alloc_bytes}].Merge(entry.allocated);
      }
      const int64_t bytes = state.at_new_peak ? entry.live : AtLastPeak(state, entry);
      if (bytes <= 0) continue;
      store_.Set(context, ids.peak_live_bytes, static_cast<double>(bytes));
      published_.emplace_back(context, ids.peak_live_bytes);
    }
  }
  // Allocations only add up until ResetPeaks, which clears them with the
  // store: replacing the earlier call's value leaves nothing stale.
  for (const auto& [key, samples] : allocated) store_.Set(key.first, key.second, samples);
}

std::vector<std::pair<std::string, std::string>> MemoryMetrics::Metadata() {
  std::lock_guard<SpinLock> guard(lock_);
  DrainLocked();
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [device, state] : devices_) {
    const std::string prefix =
        device < 0 ? std::string("host_memory_")
                   : "gpu" + std::to_string(device) + "_memory_";
    out.emplace_back(prefix + "peak_bytes", std::to_string(state.peak));
    out.emplace_back(prefix + "live_bytes", std::to_string(state.live));
    out.emplace_back(prefix + "allocations", std::to_string(state.allocations));
    out.emplace_back(prefix + "frees", std::to_string(state.frees));
    // Contexts that allocated: what the per-event work once grew with.
    out.emplace_back(prefix + "contexts", std::to_string(state.live_entries.size()));
    if (state.live_before_profiling > 0) {
      out.emplace_back(prefix + "before_profiling_bytes",
                       std::to_string(state.live_before_profiling));
    }
    if (state.reserved_seen) {
      out.emplace_back(prefix + "reserved_peak_bytes",
                       std::to_string(state.reserved_peak));
      out.emplace_back(prefix + "reserved_bytes", std::to_string(state.reserved));
    }
  }
  if (unmatched_frees_ > 0) {
    out.emplace_back("memory_frees_before_start", std::to_string(unmatched_frees_));
  }
  return out;
}

void MemoryMetrics::ResetPeaks() {
  std::lock_guard<SpinLock> guard(lock_);
  DrainLocked();  // they came before the reset
  published_.clear();  // the store was cleared with it
  unmatched_frees_ = 0;
  for (auto& [device, state] : devices_) {
    state.peak = state.live;
    state.reserved_peak = state.reserved;
    ++state.peak_epoch;  // the holders of the new peak: those live now
    state.at_new_peak = false;
    state.allocations = 0;
    state.frees = 0;
    for (ContextLive& entry : state.live_entries) entry.allocated = Accumulator{};
  }
}

void MemoryMetrics::ForkChild() {
  // Held by this thread since ForkPrepare; released on the way out.
  std::lock_guard<SpinLock> guard(lock_, std::adopt_lock);
  queue_.Reset();
  allocations_.Clear();
  devices_.clear();
  last_state_ = nullptr;
  published_.clear();
  unmatched_frees_ = 0;
}

}  // namespace deepcontext::profiler

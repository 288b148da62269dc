#include "runtime/gpu/gpu_attribution.h"

#include <algorithm>
#include <type_traits>
#include <utility>

namespace deepcontext::gpu {
namespace {

constexpr std::string_view kUnattributed = "<unattributed>";
constexpr std::string_view kUnknownApi = "<unknown API>";

double Duration(uint64_t start_ns, uint64_t end_ns) {
  return end_ns > start_ns ? static_cast<double>(end_ns - start_ns) : 0.0;
}

int64_t Product(int32_t x, int32_t y, int32_t z) {
  return int64_t{std::max(x, 0)} * std::max(y, 0) * std::max(z, 0);
}

// Graph node id of a record; synchronizations never belong to a graph.
template <typename Record>
uint64_t GraphNodeOf(const Record& record) {
  if constexpr (std::is_same_v<Record, SyncRecord>) {
    return 0;
  } else {
    return record.graph_node_id;
  }
}

}  // namespace

std::string MemcpyNodeName(const MemcpyRecord& record) {
  std::string name = "memcpy ";
  name += CopyKindName(record.kind);
  // The host side decides whether the copy is staged (pageable) or DMA'd
  // directly (pinned).
  MemoryKind host = MemoryKind::kUnknown;
  switch (record.kind) {
    case CopyKind::kHostToDevice:
      host = record.src_kind;
      break;
    case CopyKind::kDeviceToHost:
      host = record.dst_kind;
      break;
    case CopyKind::kHostToHost:
      host = IsPageable(record.src_kind) ? record.src_kind : record.dst_kind;
      break;
    default:
      break;
  }
  if (host == MemoryKind::kPageable) name += " (pageable)";
  if (host == MemoryKind::kPinned) name += " (pinned)";
  if (host == MemoryKind::kManaged) name += " (managed)";
  return name;
}

std::string SyncNodeName(const SyncRecord& record) {
  std::string name = "sync: ";
  name += SyncKindName(record.kind);
  return name;
}

GpuAttribution::GpuAttribution(ContextSink& sink, AttributionOptions options)
    : sink_(sink),
      options_(options),
      table_(options.max_launches, options.max_parked_records) {}

void GpuAttribution::SetDeviceInfo(uint32_t device, const DeviceInfo& info) {
  std::lock_guard<std::mutex> guard(device_mutex_);
  devices_[device] = info;
}

void GpuAttribution::OnLaunch(const LaunchRecord& launch) {
  launches_.fetch_add(1, std::memory_order_relaxed);
  table_.AddLaunch(launch, epoch_.load(std::memory_order_acquire));
}

void GpuAttribution::ForgetLaunch(uint64_t correlation_id) {
  table_.Forget(correlation_id);
}

void GpuAttribution::BeginFlush() {
  epoch_.fetch_add(1, std::memory_order_acq_rel);
}

void GpuAttribution::OnGraphNodeCreated(uint64_t graph_node_id,
                                        ContextId context,
                                        std::string_view api_name) {
  if (graph_node_id == 0) return;
  std::lock_guard<std::mutex> guard(graph_mutex_);
  graph_nodes_[graph_node_id] = GraphNode{context, std::string(api_name)};
}

void GpuAttribution::OnGraphNodeCloned(uint64_t clone_id, uint64_t original_id) {
  if (clone_id == 0) return;
  std::lock_guard<std::mutex> guard(graph_mutex_);
  auto it = graph_nodes_.find(original_id);
  if (it == graph_nodes_.end()) return;
  GraphNode copy = it->second;  // the insert below may rehash
  graph_nodes_[clone_id] = std::move(copy);
}

void GpuAttribution::OnKernel(const KernelRecord& record) {
  std::lock_guard<std::mutex> guard(processing_mutex_);
  Handle(record, record.graph_node_id);
}

void GpuAttribution::OnMemcpy(const MemcpyRecord& record) {
  std::lock_guard<std::mutex> guard(processing_mutex_);
  Handle(record, record.graph_node_id);
}

void GpuAttribution::OnMemset(const MemsetRecord& record) {
  std::lock_guard<std::mutex> guard(processing_mutex_);
  Handle(record, record.graph_node_id);
}

void GpuAttribution::OnSync(const SyncRecord& record) {
  std::lock_guard<std::mutex> guard(processing_mutex_);
  Handle(record, 0);
}

template <typename Record>
void GpuAttribution::Handle(const Record& record, uint64_t graph_node_id) {
  ProcessLateLocked();
  ++stats_.records;
  // Synchronization records are made by the driver callbacks when the call
  // returns, not delivered by CUPTI, so they say nothing about whether
  // CUPTI's records still arrive (CountUnanswered).
  if constexpr (!std::is_same_v<Record, SyncRecord>) {
    newest_record_ = std::max(newest_record_, record.correlation_id);
  }
  LaunchInfo launch;
  if (graph_node_id != 0) {
    GraphNode node;
    bool known = false;
    {
      std::lock_guard<std::mutex> guard(graph_mutex_);
      auto it = graph_nodes_.find(graph_node_id);
      if (it != graph_nodes_.end()) {
        node = it->second;
        known = true;
      }
    }
    if (known) {
      ContextId context = node.context;
      if (table_.Claim(record.correlation_id, &launch) && placer_) {
        context = placer_(node.context, launch.context);
      }
      ++stats_.attributed;
      ++stats_.via_graph_node;
      Credit(Target{context, node.api_name}, record);
      return;
    }
  }
  if (table_.Claim(record.correlation_id, &launch)) {
    ++stats_.attributed;
    Target target{launch.context, launch.api_name()};
    if (graph_node_id != 0 && resolver_) {
      std::string_view name;
      if constexpr (std::is_same_v<Record, KernelRecord>) name = record.name;
      if constexpr (std::is_same_v<Record, MemsetRecord>) name = kGraphMemsetName;
      if constexpr (std::is_same_v<Record, MemcpyRecord>) name = kGraphMemcpyName;
      if (!name.empty()) {
        const ContextId resolved = resolver_(record.correlation_id, graph_node_id, name);
        if (resolved != 0) target.context = resolved;
      }
    }
    Credit(target, record);
    return;
  }
  switch (table_.Park(record.correlation_id, PendingRecord(record), &launch)) {
    case CorrelationTable::ParkResult::kParked:
      return;
    case CorrelationTable::ParkResult::kLaunched:
      ++stats_.attributed;
      Credit(Target{launch.context, launch.api_name()}, record);
      return;
    case CorrelationTable::ParkResult::kFull:
      if (windowed_.load(std::memory_order_relaxed)) {
        ++stats_.outside_windows;
        return;
      }
      ++stats_.unattributed;
      Credit(Target{}, record);
      return;
  }
}

void GpuAttribution::CreditPending(const LaunchInfo* launch,
                                   std::vector<PendingRecord>& records,
                                   bool late) {
  Target target;
  if (launch != nullptr) target = Target{launch->context, launch->api_name()};
  const bool windowed = windowed_.load(std::memory_order_relaxed);
  for (const PendingRecord& pending : records) {
    if (launch != nullptr) {
      ++stats_.attributed;
      if (late) ++stats_.late;
    } else if (windowed) {
      ++stats_.outside_windows;
      continue;
    } else {
      ++stats_.unattributed;
    }
    std::visit([&](const auto& record) { Credit(target, record); }, pending);
  }
}

void GpuAttribution::ProcessLateLocked() {
  table_.TakeReady(
      [this](const LaunchInfo& launch, std::vector<PendingRecord>& records) {
        CreditPending(&launch, records, /*late=*/true);
      });
}

void GpuAttribution::ProcessLate() {
  std::lock_guard<std::mutex> guard(processing_mutex_);
  ProcessLateLocked();
}

void GpuAttribution::Flush() {
  std::lock_guard<std::mutex> guard(processing_mutex_);
  ProcessLateLocked();
  table_.Flush(
      [this](const LaunchInfo* launch, std::vector<PendingRecord>& records) {
        CreditPending(launch, records, /*late=*/true);
      });
  stats_.launches_without_records += table_.CountUnanswered(
      epoch_.load(std::memory_order_acquire), newest_record_);
}

ContextId GpuAttribution::Child(ContextId parent, GpuNodeKind kind,
                                std::string_view name) {
  if (parent == 0) return 0;
  ChildMap& names = children_[parent * 16 + static_cast<uint64_t>(kind)];
  auto it = names.find(name);
  if (it != names.end()) return it->second;
  const ContextId child = sink_.Child(parent, kind, name);
  // Failures are not cached: the sink may recover (e.g. after init).
  if (child != 0) names.emplace(std::string(name), child);
  return child;
}

ContextId GpuAttribution::ApiNode(const Target& target) {
  if (target.context == 0) {
    return Child(options_.root_context, GpuNodeKind::kApi, kUnattributed);
  }
  return Child(target.context, GpuNodeKind::kApi,
               target.api.empty() ? kUnknownApi : target.api);
}

void GpuAttribution::Credit(const Target& target, const KernelRecord& record) {
  {
    auto [it, inserted] = busy_.try_emplace(record.device, options_.busy_window);
    it->second.Add(record.start_ns, record.end_ns);
  }
  const ContextId node =
      Child(ApiNode(target), GpuNodeKind::kKernel, record.name);
  if (node == 0) {
    ++stats_.dropped;
    return;
  }
  const int64_t blocks = Product(record.grid_x, record.grid_y, record.grid_z);
  const int64_t threads = Product(record.block_x, record.block_y, record.block_z);
  const int64_t shared =
      int64_t{record.static_shared_bytes} + record.dynamic_shared_bytes;
  // A sample of 0 would pull the kernel's mean time down and hide that its
  // time is unknown; the launch still counts for its shape metrics.
  if (record.end_ns > record.start_ns) {
    Add(node, GpuMetric::kGpuTime, Duration(record.start_ns, record.end_ns));
  } else {
    Add(node, GpuMetric::kUntimedLaunches, 1);
    ++stats_.untimed_kernels;
  }
  Add(node, GpuMetric::kBlocks, static_cast<double>(blocks));
  Add(node, GpuMetric::kThreadsPerBlock, static_cast<double>(threads));
  Add(node, GpuMetric::kThreadsLaunched, static_cast<double>(blocks * threads));
  Add(node, GpuMetric::kRegistersPerThread, record.registers_per_thread);
  Add(node, GpuMetric::kSharedMemoryBytes, static_cast<double>(shared));

  Occupancy occupancy;
  {
    std::lock_guard<std::mutex> guard(device_mutex_);
    auto it = devices_.find(record.device);
    if (it == devices_.end()) return;
    LaunchShape shape;
    shape.threads_per_block = static_cast<int>(threads);
    shape.regs_per_thread = static_cast<int>(record.registers_per_thread);
    shape.shared_bytes_per_block = shared;
    shape.shared_carveout_bytes = record.shared_carveout_bytes;
    occupancy = ComputeOccupancy(it->second, shape);
  }
  // A launch that "cannot fit" means the device info is wrong, not that
  // the kernel had zero occupancy: leave the metric out.
  if (occupancy.blocks_per_sm > 0) {
    Add(node, GpuMetric::kOccupancy, occupancy.fraction);
  }
}

void GpuAttribution::Credit(const Target& target, const MemcpyRecord& record) {
  const ContextId node =
      Child(ApiNode(target), GpuNodeKind::kMemcpy, MemcpyNodeName(record));
  if (node == 0) {
    ++stats_.dropped;
    return;
  }
  Add(node, GpuMetric::kGpuTime, Duration(record.start_ns, record.end_ns));
  Add(node, GpuMetric::kBytes, static_cast<double>(record.bytes));
}

void GpuAttribution::Credit(const Target& target, const MemsetRecord& record) {
  const ContextId node = Child(ApiNode(target), GpuNodeKind::kMemset, "memset");
  if (node == 0) {
    ++stats_.dropped;
    return;
  }
  Add(node, GpuMetric::kGpuTime, Duration(record.start_ns, record.end_ns));
  Add(node, GpuMetric::kBytes, static_cast<double>(record.bytes));
}

void GpuAttribution::Credit(const Target& target, const SyncRecord& record) {
  const ContextId node =
      Child(ApiNode(target), GpuNodeKind::kSync, SyncNodeName(record));
  if (node == 0) {
    ++stats_.dropped;
    return;
  }
  Add(node, GpuMetric::kSyncTime, Duration(record.start_ns, record.end_ns));
}

AttributionStats GpuAttribution::Stats() const {
  std::lock_guard<std::mutex> guard(processing_mutex_);
  AttributionStats stats = stats_;
  stats.launches = launches_.load(std::memory_order_relaxed);
  stats.parked = table_.parked();
  stats.evicted_launches = table_.evicted();
  stats.tracked = table_.size();
  return stats;
}

std::vector<DeviceActivity> GpuAttribution::Devices() const {
  std::lock_guard<std::mutex> guard(processing_mutex_);
  std::vector<DeviceActivity> out;
  for (const auto& [device, intervals] : busy_) {
    DeviceActivity activity;
    activity.device = device;
    activity.busy_ns = intervals.Length();
    activity.first_start_ns = intervals.first_start();
    activity.last_end_ns = intervals.last_end();
    activity.kernels = intervals.count();
    out.push_back(activity);
  }
  std::sort(out.begin(), out.end(),
            [](const DeviceActivity& a, const DeviceActivity& b) {
              return a.device < b.device;
            });
  return out;
}

}  // namespace deepcontext::gpu

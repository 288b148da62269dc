// The questions every rule asks of a calling context tree, answered once:
// which metrics exist, where the user's source line of a node is, whether a
// node runs in the forward or backward pass, how long the profile covered
// and what the GPU looked like.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tools/analysis/profile_tree.h"
#include "tools/analyzer/finding.h"

namespace deepcontext::analyzer {

using analysis::MetricIndex;
using analysis::NodeIndex;

inline constexpr NodeIndex kNoNode = UINT32_MAX;

// Indices of the well-known metrics (docs/FORMAT.md, runtime/cupti), each
// absent when the profile lacks it.
struct KnownMetrics {
  std::optional<MetricIndex> calls, cpu_time, wall_time, gpu_time, sync_time,
      bytes, blocks, threads_per_block, occupancy, peak_live_bytes;
};

class ProfileView {
 public:
  explicit ProfileView(const analysis::ProfileTree& tree);

  const analysis::ProfileTree& tree() const { return tree_; }
  const KnownMetrics& metrics() const { return metrics_; }

  // Exclusive / inclusive sum and exclusive sample count; 0 when absent.
  double Exclusive(NodeIndex node, std::optional<MetricIndex> metric) const;
  double Inclusive(NodeIndex node, std::optional<MetricIndex> metric) const;
  double Count(NodeIndex node, std::optional<MetricIndex> metric) const;

  // Host time of a subtree: wall_time when recorded, else cpu_time.
  double HostTime(NodeIndex node) const;
  std::optional<MetricIndex> host_time_metric() const;

  // The nearest Python frame at or above node that is the user's code (not
  // a library under site-packages, dist-packages or the standard library);
  // the nearest Python frame when no user frame exists; kNoNode without
  // any Python frame.
  NodeIndex UserFrame(NodeIndex node) const;
  // The outermost framework operator at or above node, or kNoNode.
  NodeIndex OuterOperator(NodeIndex node) const;
  // "forward", "backward" or "" from the nearest phase node above node.
  std::string PhaseOf(NodeIndex node) const;
  // True when some ancestor (or node) is a Python frame called name in a
  // file whose path contains file_part.
  bool UnderPythonFunction(NodeIndex node, std::string_view name_prefix,
                           std::string_view file_part) const;

  // Fills a FindingContext for node (the blamed node itself is the kernel
  // when it is GPU activity).
  FindingContext ContextOf(NodeIndex node) const;

  // Wall-clock span of the profiles (longest of the inputs), from the
  // start/end metadata; 0 when unknown.
  double WallNs() const { return wall_ns_; }
  // Time the GPUs were busy (union of kernel/copy intervals per device from
  // the gpu<N>_busy_ns metadata, else the sum of gpu_time); 0 without GPU.
  double GpuBusyNs() const { return gpu_busy_ns_; }
  bool HasGpu() const { return has_gpu_; }
  // From the first GPU activity to the last (gpu<N>_first_start_ns /
  // gpu<N>_last_end_ns, widest over devices and inputs), 0 when unknown.
  double GpuSpanNs() const { return gpu_span_ns_; }
  // Lowest compute capability of the GPUs seen (e.g. 9.0), 0 when unknown.
  double ComputeCapability() const { return compute_capability_; }
  // Streaming multiprocessors of the smallest GPU seen, 0 when unknown.
  double SmCount() const { return sm_count_; }
  // The largest share of a device's memory its allocator held at the peak
  // (gpu<N>_memory_reserved_peak_bytes, else the allocated peak, over
  // gpu<N>_memory_total_bytes), 0 when unknown.
  double MemoryPressure() const { return memory_pressure_; }

  // The time a benefit is a share of: the wall time when known, else the
  // host time of the whole tree.
  double BasisNs() const;
  const char* BasisName() const;

 private:
  const analysis::ProfileTree& tree_;
  KnownMetrics metrics_;
  double wall_ns_ = 0;
  double gpu_busy_ns_ = 0;
  double gpu_span_ns_ = 0;
  double memory_pressure_ = 0;
  bool has_gpu_ = false;
  double compute_capability_ = 0;
  double sm_count_ = 0;
};

// "train.py:42" for a context (file's last path component), "" without one.
std::string ShortLocation(const FindingContext& context);

}  // namespace deepcontext::analyzer

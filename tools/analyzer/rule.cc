#include "tools/analyzer/rule.h"

#include <algorithm>
#include <utility>

namespace deepcontext::analyzer {

Finding MakeFinding(const ProfileView& view, const char* rule_id,
                    NodeIndex node, std::string title, double low_ns,
                    double high_ns, std::string method) {
  Finding finding;
  finding.rule_id = rule_id;
  finding.title = std::move(title);
  finding.context = view.ContextOf(node);
  finding.benefit.low_ns = std::max(0.0, std::min(low_ns, high_ns));
  finding.benefit.high_ns = std::max(0.0, high_ns);
  finding.benefit.basis_ns = view.BasisNs();
  finding.benefit.basis = view.BasisName();
  finding.benefit.method = std::move(method);
  finding.severity = SeverityForShare(finding.benefit.ShareHigh());
  return finding;
}

bool WorthReporting(const ProfileView& view, const Thresholds& thresholds,
                    double high_ns) {
  return high_ns >= thresholds.min_benefit_share * view.BasisNs();
}

const std::vector<Rule>& BuiltinRules() {
  static const std::vector<Rule> kRules = {
      {"gpu_idle", "GPU idle most of the run; names the lines holding the CPU",
       CheckGpuIdle},
      {"host_device_sync", "host waits for the GPU under a source line",
       CheckHostDeviceSync},
      {"pageable_copy", "host<->device copies from pageable memory",
       CheckPageableCopy},
      {"launch_bound", "many kernels shorter than their launch under a line",
       CheckLaunchBound},
      {"unfused_elementwise", "chains of elementwise operators under one line",
       CheckUnfusedElementwise},
      {"fwd_bwd_imbalance", "backward pass costing many times the forward",
       CheckForwardBackwardImbalance},
      {"slow_optimizer", "optimizer step in its per-parameter for-loop form",
       CheckSlowOptimizer},
      {"zero_grad_fill", "zero_grad writing zeros into every gradient",
       CheckZeroGradFill},
      {"tensor_cores_unused", "FP32 GEMM kernels on a GPU with tensor cores",
       CheckTensorCoresUnused},
      {"low_occupancy", "hot kernels with low occupancy or tiny grids",
       CheckLowOccupancy},
      {"memory_peak", "source lines holding the device memory peak",
       CheckMemoryPeak},
      {"gpu_stalls", "hot kernels dominated by one stall reason (--gpu-samples)",
       CheckGpuStalls},
      {"gpu_counters",
       "hot kernels far from the peak of their unit: memory-bound at low DRAM %, "
       "GEMMs with an idle tensor pipe (--gpu-metrics)",
       CheckGpuCounters},
  };
  return kRules;
}

}  // namespace deepcontext::analyzer

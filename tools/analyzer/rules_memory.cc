// Rules about device memory: which source lines hold the peak.
#include <map>
#include <string>

#include "tools/analyzer/rule.h"
#include "tools/analyzer/units.h"

namespace deepcontext::analyzer {

namespace {

using format::FrameKind;

bool UnderOptimizer(const analysis::ProfileTree& tree, NodeIndex node) {
  for (NodeIndex at = node; at != analysis::ProfileTree::kRootNode;
       at = tree.node(at).parent) {
    const analysis::Frame& frame = tree.frame_of(at);
    if (frame.kind == FrameKind::kPythonFrame &&
        frame.file.find("torch/optim/") != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

RuleOutcome CheckMemoryPeak(const ProfileView& view, const Thresholds& t) {
  RuleOutcome outcome;
  const std::optional<MetricIndex> metric = view.metrics().peak_live_bytes;
  const analysis::ProfileTree& tree = view.tree();
  if (!metric || tree.Total(*metric) <= 0) {
    outcome.skipped = "no device memory tracked (gpu_peak_live_bytes)";
    return outcome;
  }
  const double peak = tree.Total(*metric);
  struct Holder {
    double bytes = 0;
    NodeIndex heaviest = kNoNode;
    double heaviest_bytes = -1;
    bool optimizer = false, forward = false;
  };
  std::map<analysis::FrameId, Holder> holders;  // by the user's source line
  for (NodeIndex n = 1; n < tree.size(); ++n) {
    double bytes = view.Exclusive(n, metric);
    if (bytes <= 0) continue;
    NodeIndex line = view.UserFrame(n);
    Holder& holder = holders[tree.node(line == kNoNode ? n : line).frame];
    holder.bytes += bytes;
    if (bytes > holder.heaviest_bytes) {
      holder.heaviest_bytes = bytes;
      holder.heaviest = n;
      holder.optimizer = UnderOptimizer(tree, n);
      holder.forward = view.PhaseOf(n) == "forward";
    }
  }
  for (const auto& [frame, holder] : holders) {
    double share = holder.bytes / peak;
    if (share < t.memory_holder_share) continue;
    Finding f = MakeFinding(
        view, "memory_peak", holder.heaviest,
        "holds " + FormatPercent(share) + " of the device memory peak", 0, 0,
        "bytes allocated here and live at the peak");
    f.benefit.bytes = holder.bytes;
    f.benefit.peak_bytes = peak;
    const double pressure = view.MemoryPressure();
    const bool big_holder = share >= t.memory_holder_high_share;
    if (pressure <= 0) {
      f.severity = big_holder ? Severity::kMedium : Severity::kLow;
    } else if (pressure >= t.memory_pressure_high) {
      f.severity = big_holder ? Severity::kHigh : Severity::kMedium;
    } else if (pressure >= t.memory_pressure_medium) {
      f.severity = Severity::kMedium;
    } else {
      f.severity = Severity::kLow;
    }
    f.evidence.push_back({"peak_live_bytes", holder.bytes, "bytes",
                          ">=", t.memory_holder_share * peak});
    f.evidence.push_back({"device_peak_bytes", peak, "bytes", "", 0});
    if (pressure > 0) {
      f.evidence.push_back({"device_memory_reserved_share", pressure, "ratio", ">=",
                            t.memory_pressure_high});
    }
    if (holder.optimizer) {
      f.suggestion =
          "Optimizer state (moments, master weights) is live at the peak. "
          "Shard it across ranks (ZeRO / FSDP), or use a lighter optimizer "
          "state; foreach implementations also need temporary copies.";
      f.example =
          "torch.distributed.optim.ZeroRedundancyOptimizer(params, "
          "torch.optim.AdamW)";
    } else if (holder.forward) {
      f.suggestion =
          "Activations saved for the backward pass are live at the peak. "
          "Recompute them in backward (activation checkpointing) or keep "
          "them in BF16 under autocast; in evaluation run under no_grad.";
      f.example =
          "y = torch.utils.checkpoint.checkpoint(block, x, "
          "use_reentrant=False)";
    } else {
      f.suggestion =
          "Tensors allocated here are still live at the peak. Free them "
          "earlier (del, or no reference kept across steps, e.g. "
          "loss.detach() when accumulating), or preallocate and reuse.";
      f.example =
          "total_loss += loss.detach()  # not loss: keeps the graph alive";
    }
    outcome.findings.push_back(std::move(f));
  }
  return outcome;
}

}  // namespace deepcontext::analyzer

// Rules about the host side of GPU programs: an idle GPU, waits for the GPU,
// pageable copies and launch overhead. All need GPU activity in the profile.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tools/analyzer/rule.h"
#include "tools/analyzer/units.h"

namespace deepcontext::analyzer {

namespace {

using format::FrameKind;

constexpr const char* kNoGpu = "no GPU activity in the profile";

// Sums, per user source line, the values of metric over the nodes of kind.
// A line reached along several call paths (a helper called from two
// places) has one Python frame node per path; they share one Frame, and
// the user is told about the line once.
struct LineTotal {
  double sum = 0, count = 0, bytes = 0;
  NodeIndex heaviest = kNoNode;
  double heaviest_sum = -1;
  std::set<NodeIndex> lines;        // the line's Python frame nodes
  bool heaviest_to_device = false;  // host_device_sync: a blocking HtoD copy
};

std::map<analysis::FrameId, LineTotal> TotalsByLine(
    const ProfileView& view, FrameKind kind, std::optional<MetricIndex> metric,
    bool (*accept)(const std::string&)) {
  std::map<analysis::FrameId, LineTotal> totals;
  const analysis::ProfileTree& tree = view.tree();
  for (NodeIndex n = 1; n < tree.size(); ++n) {
    const analysis::Frame& frame = tree.frame_of(n);
    if (frame.kind != kind || (accept != nullptr && !accept(frame.name)))
      continue;
    double sum = view.Exclusive(n, metric);
    if (sum <= 0) continue;
    NodeIndex line = view.UserFrame(n);
    LineTotal& total = totals[tree.node(line == kNoNode ? n : line).frame];
    if (line != kNoNode) total.lines.insert(line);
    total.sum += sum;
    total.count += view.Count(n, metric);
    total.bytes += view.Exclusive(n, view.metrics().bytes);
    if (sum > total.heaviest_sum) {
      total.heaviest_sum = sum;
      total.heaviest = n;
    }
  }
  return totals;
}

// Host waits for the GPU per user line: explicit synchronizations
// (sync_time of sync nodes) and blocking device-to-host copies (.item(),
// .cpu(), nonzero), whose wait is the host time of the operator that made
// them. An operator holding both counts the larger, never the sum. A
// blocking host-to-device copy (.to("cuda") without non_blocking: torch
// synchronizes the stream after it) waits too, but its own copy time is
// pageable_copy's to report, so it is left out of the wait.
std::map<analysis::FrameId, LineTotal> WaitsByLine(const ProfileView& view) {
  const analysis::ProfileTree& tree = view.tree();
  struct OpWait {
    double sync_ns = 0, syncs = 0, to_device_ns = 0;
    NodeIndex activity = kNoNode;  // the sync or copy node, for the context
  };
  std::map<NodeIndex, OpWait> ops;
  std::map<NodeIndex, double> to_device;  // HtoD copy time per operator
  std::map<analysis::FrameId, LineTotal> totals;
  auto add = [&](NodeIndex blamed, NodeIndex anchor, double wait, double count,
                 bool host_to_device) {
    NodeIndex line = view.UserFrame(anchor);
    LineTotal& total = totals[tree.node(line == kNoNode ? anchor : line).frame];
    if (line != kNoNode) total.lines.insert(line);
    total.sum += wait;
    total.count += count;
    if (wait > total.heaviest_sum) {
      total.heaviest_sum = wait;
      total.heaviest = blamed;
      total.heaviest_to_device = host_to_device;
    }
  };
  for (NodeIndex n = 1; n < tree.size(); ++n) {
    const analysis::Frame& frame = tree.frame_of(n);
    if (frame.kind == FrameKind::kGpuMemcpy &&
        frame.name.starts_with("memcpy HtoD")) {
      NodeIndex op = view.OuterOperator(n);
      if (op != kNoNode) {
        to_device[op] += view.Exclusive(n, view.metrics().gpu_time);
      }
      continue;
    }
    bool sync = frame.kind == FrameKind::kGpuSync;
    bool device_to_host = frame.kind == FrameKind::kGpuMemcpy &&
                          frame.name.starts_with("memcpy DtoH");
    if (!sync && !device_to_host) continue;
    double sync_ns = sync ? view.Exclusive(n, view.metrics().sync_time) : 0;
    double syncs = sync ? view.Count(n, view.metrics().sync_time) : 0;
    NodeIndex op = view.OuterOperator(n);
    if (op == kNoNode) {
      // torch.cuda.synchronize() and friends: no operator around the wait.
      if (sync_ns > 0) add(n, n, sync_ns, syncs, false);
      continue;
    }
    OpWait& wait = ops[op];
    wait.sync_ns += sync_ns;
    wait.syncs += syncs;
    if (wait.activity == kNoNode || sync) wait.activity = n;
  }
  for (const auto& [op, wait] : ops) {
    auto copy = to_device.find(op);
    double copy_ns = copy == to_device.end() ? 0 : copy->second;
    double host = view.Inclusive(op, view.metrics().wall_time) - copy_ns;
    double calls = view.Exclusive(op, view.metrics().calls);
    add(wait.activity, op, std::max({host, wait.sync_ns - copy_ns, 0.0}),
        std::max(calls, wait.syncs), copy != to_device.end());
  }
  return totals;
}

// Whether the profile holds a [compile] phase: torch.compile or a JAX jit
// compiled inside the profiled span. Its idle GPU time is then largely a
// one-time cost, and torch.compile is no advice to a program that uses it.
bool CompiledInProfile(const analysis::ProfileTree& tree) {
  for (NodeIndex n = 1; n < tree.size(); ++n) {
    const analysis::Frame& frame = tree.frame_of(n);
    if (frame.kind == FrameKind::kPhase && frame.name == "[compile]") {
      return true;
    }
  }
  return false;
}

bool IsPageableCopy(const std::string& name) {
  return name.starts_with("memcpy ") &&
         name.find("(pageable)") != std::string::npos;
}

}  // namespace

RuleOutcome CheckGpuIdle(const ProfileView& view, const Thresholds& t) {
  RuleOutcome outcome;
  if (!view.HasGpu()) {
    outcome.skipped = kNoGpu;
    return outcome;
  }
  // The span from the first GPU activity to the last leaves out imports,
  // CUDA initialization and the work after the loop.
  double wall = view.GpuSpanNs() > 0 ? view.GpuSpanNs() : view.WallNs();
  if (wall <= 0) {
    outcome.skipped = "no start/end time in the profile metadata";
    return outcome;
  }
  double busy = std::min(view.GpuBusyNs(), wall);
  double share = busy / wall;
  if (share >= t.gpu_busy_low) return outcome;
  // The line holding the CPU: the deepest Python frame with a large share of
  // host time that launched little GPU work itself.
  const analysis::ProfileTree& tree = view.tree();
  double root_host = view.HostTime(analysis::ProfileTree::kRootNode);
  NodeIndex holder = analysis::ProfileTree::kRootNode;
  double holder_time = 0;
  uint32_t holder_depth = 0;
  double best = 0;
  for (NodeIndex n = 1; n < tree.size(); ++n) {
    if (tree.frame_of(n).kind != FrameKind::kPythonFrame) continue;
    double host = view.HostTime(n);
    if (host < t.cpu_holder_share * root_host) continue;
    if (view.Inclusive(n, view.metrics().gpu_time) > 0.1 * host) continue;
    best = std::max(best, host);
  }
  for (NodeIndex n = 1; n < tree.size() && best > 0; ++n) {
    if (tree.frame_of(n).kind != FrameKind::kPythonFrame) continue;
    double host = view.HostTime(n);
    if (host < 0.8 * best) continue;
    if (view.Inclusive(n, view.metrics().gpu_time) > 0.1 * host) continue;
    if (holder == analysis::ProfileTree::kRootNode ||
        tree.node(n).depth > holder_depth) {
      holder = view.UserFrame(n) == kNoNode ? n : view.UserFrame(n);
      holder_depth = tree.node(n).depth;
      holder_time = host;
    }
  }
  double idle = wall - busy;
  Finding f = MakeFinding(
      view, "gpu_idle", holder,
      "GPU busy only " + FormatPercent(share) + " of the run", idle * 0.25,
      idle,
      "idle GPU time between the first and last GPU activity (upper "
      "bound), a quarter of it as the lower bound");
  f.evidence.push_back({"gpu_busy_share", share, "ratio", "<", t.gpu_busy_low});
  f.evidence.push_back({"gpu_idle_time", idle, "ns", "", 0});
  f.evidence.push_back({"gpu_active_span", wall, "ns", "", 0});
  if (holder_time > 0) {
    f.evidence.push_back({"cpu_holder_time", holder_time, "ns",
                          ">=", t.cpu_holder_share * root_host});
  }
  bool loader = false;
  for (const std::string& label : f.context.path) {
    if (label.find("DataLoader") != std::string::npos ||
        label.find("_next_data") != std::string::npos ||
        label.find("__getitem__") != std::string::npos) {
      loader = true;
    }
  }
  if (CompiledInProfile(tree)) {
    f.suggestion =
        "Code was compiled (torch.compile or jax.jit, see the [compile] "
        "nodes) inside the profiled span, and the idle time includes the "
        "compilation, a one-time cost. Profile the steady state after "
        "warm-up steps before acting on this; if the GPU still waits there, "
        "move CPU work under this line off the training loop or enlarge the "
        "batch.";
    f.example =
        "with deepcontext.profile(\"steady.dctx\"): train(steps)  "
        "# after the warm-up steps";
  } else if (loader) {
    f.suggestion =
        "The input pipeline runs in the training process. Load and augment "
        "in worker processes with pinned memory, and keep them alive "
        "between epochs.";
    f.example =
        "DataLoader(ds, batch_size=..., num_workers=4, "
        "pin_memory=True, persistent_workers=True)";
  } else {
    f.suggestion =
        "The CPU work under this line keeps the GPU waiting. Move "
        "pre-processing to DataLoader workers or to the GPU, enlarge the "
        "batch, or cut Python overhead with torch.compile / CUDA graphs.";
    f.example = "model = torch.compile(model)";
  }
  outcome.findings.push_back(std::move(f));
  return outcome;
}

RuleOutcome CheckHostDeviceSync(const ProfileView& view, const Thresholds& t) {
  RuleOutcome outcome;
  if (!view.metrics().sync_time && !view.HasGpu()) {
    outcome.skipped = kNoGpu;
    return outcome;
  }
  auto totals = WaitsByLine(view);
  for (const auto& [frame, total] : totals) {
    if (total.sum < t.sync_min_share * view.BasisNs()) continue;
    if (total.count < t.sync_min_count) continue;
    // Removing the wait does not save all of it (the GPU was busy), but at
    // least the refill bubble after each sync: ~one launch latency.
    double low = std::min(total.sum, total.count * 2 * t.launch_cost_ns);
    Finding f = MakeFinding(
        view, "host_device_sync", total.heaviest,
        "host waited " + FormatDuration(total.sum) + " for the GPU in " +
            FormatCount(total.count) + " synchronizations",
        low, total.sum,
        "upper: time waited; lower: one GPU refill bubble (2 launch "
        "latencies) per synchronization");
    f.evidence.push_back({"wait_time", total.sum, "ns",
                          ">=", t.sync_min_share * view.BasisNs()});
    f.evidence.push_back(
        {"synchronizations", total.count, "count", ">=", t.sync_min_count});
    const std::string& op = f.context.op;
    if (total.heaviest_to_device) {
      f.suggestion =
          "A blocking host-to-device copy waits for everything queued on "
          "the GPU before it. Copy from pinned memory with "
          "non_blocking=True, or keep the data on the GPU.";
      f.example =
          "DataLoader(..., pin_memory=True); x = x.to(\"cuda\", "
          "non_blocking=True)";
    } else if (op.find("item") != std::string::npos ||
               op.find("_local_scalar_dense") != std::string::npos) {
      f.suggestion =
          "`.item()` copies to the host and waits every time. Accumulate "
          "on the GPU and read the value every N steps.";
      f.example =
          "total += loss.detach()  # ...; if step % 100 == 0: "
          "print(total.item())";
    } else if (op.find("nonzero") != std::string::npos) {
      f.suggestion =
          "nonzero/boolean indexing must learn the result size on the "
          "host. Use masking (torch.where) to keep shapes static.";
      f.example = "x = torch.where(mask, x, 0)";
    } else if (op.find("aten::to") != std::string::npos ||
               op.find("copy") != std::string::npos ||
               op.find("cpu") != std::string::npos) {
      f.suggestion =
          "A device-to-host copy (.cpu(), .tolist(), print(tensor)) waits "
          "for the GPU. Keep the data on the GPU, or copy into a pinned "
          "buffer with non_blocking=True and wait on an event later.";
      f.example =
          "host.copy_(t, non_blocking=True); event.record()  # read "
          "after event.synchronize()";
    } else {
      f.suggestion =
          "An explicit synchronization (torch.cuda.synchronize, "
          "stream/event sync) inside the loop stalls the launch queue. "
          "Remove it, or synchronize only every N steps; "
          "torch.cuda.set_sync_debug_mode(\"warn\") lists hidden ones.";
      f.example = "if step % 100 == 0: torch.cuda.synchronize()";
    }
    outcome.findings.push_back(std::move(f));
  }
  return outcome;
}

RuleOutcome CheckPageableCopy(const ProfileView& view, const Thresholds& t) {
  RuleOutcome outcome;
  if (!view.metrics().gpu_time || !view.metrics().bytes) {
    outcome.skipped = "no GPU copies traced";
    return outcome;
  }
  auto totals = TotalsByLine(view, FrameKind::kGpuMemcpy,
                             view.metrics().gpu_time, IsPageableCopy);
  for (const auto& [frame, total] : totals) {
    double mean_bytes = total.count > 0 ? total.bytes / total.count : 0;
    if (mean_bytes < t.pageable_min_bytes) continue;
    if (total.count < t.pageable_min_copies) continue;
    double pinned = total.bytes / t.pinned_bytes_per_ns;
    double saving = total.sum - pinned;
    if (saving <= 0 || !WorthReporting(view, t, saving)) continue;
    Finding f =
        MakeFinding(view, "pageable_copy", total.heaviest,
                    FormatCount(total.count) + " copies of " +
                        FormatBytes(mean_bytes) + " from pageable host memory",
                    saving * 0.5, saving,
                    "copy time - bytes / pinned bandwidth (" +
                        FormatRatio(t.pinned_bytes_per_ns) +
                        " GB/s); lower half for overlap");
    f.evidence.push_back({"pageable_copy_time", total.sum, "ns", "", 0});
    f.evidence.push_back(
        {"mean_copy_bytes", mean_bytes, "bytes", ">=", t.pageable_min_bytes});
    f.evidence.push_back(
        {"copies", total.count, "count", ">=", t.pageable_min_copies});
    f.evidence.push_back({"achieved_bandwidth", total.bytes / total.sum, "GB/s",
                          "<", t.pinned_bytes_per_ns});
    f.suggestion =
        "Pageable memory is staged through a driver buffer and the copy "
        "cannot overlap. Pin at the source (DataLoader pin_memory=True or a "
        "reused pinned buffer) and copy with non_blocking=True; data that "
        "never changes should stay on the GPU.";
    f.example =
        "DataLoader(..., pin_memory=True); x = x.to(\"cuda\", "
        "non_blocking=True)";
    outcome.findings.push_back(std::move(f));
  }
  return outcome;
}

RuleOutcome CheckLaunchBound(const ProfileView& view, const Thresholds& t) {
  RuleOutcome outcome;
  if (!view.metrics().gpu_time) {
    outcome.skipped = kNoGpu;
    return outcome;
  }
  auto totals = TotalsByLine(view, FrameKind::kGpuKernel,
                             view.metrics().gpu_time, nullptr);
  for (const auto& [frame, total] : totals) {
    if (total.lines.empty() || total.count < t.launch_bound_min_kernels)
      continue;
    double mean = total.sum / total.count;
    if (mean >= t.short_kernel_ns) continue;
    double host = 0;
    for (NodeIndex line : total.lines) host += view.HostTime(line);
    NodeIndex line = *total.lines.begin();
    // Host-bound only when the line spends more time on the host than its
    // kernels take on the GPU.
    if (host <= total.sum) continue;
    double high = std::min(total.count * t.launch_cost_ns, host - total.sum);
    if (!WorthReporting(view, t, high)) continue;
    Finding f = MakeFinding(
        view, "launch_bound", line,
        FormatCount(total.count) + " kernels of " + FormatDuration(mean) +
            " on average: launch overhead dominates",
        high * 0.3, high,
        "launches x launch cost, capped by host time - GPU time");
    f.evidence.push_back({"kernel_runs", total.count, "count",
                          ">=", t.launch_bound_min_kernels});
    f.evidence.push_back(
        {"mean_kernel_time", mean, "ns", "<", t.short_kernel_ns});
    f.evidence.push_back({"host_time", host, "ns", ">", total.sum});
    f.suggestion =
        "Each kernel is shorter than launching it. Batch the work into "
        "fewer, larger kernels: torch.compile(mode=\"reduce-overhead\") "
        "(CUDA graphs), foreach/fused ops, or a larger batch.";
    f.example = "step = torch.compile(step, mode=\"reduce-overhead\")";
    outcome.findings.push_back(std::move(f));
  }
  return outcome;
}

}  // namespace deepcontext::analyzer

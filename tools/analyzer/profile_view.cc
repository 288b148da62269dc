#include "tools/analyzer/profile_view.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

namespace deepcontext::analyzer {

namespace {

using format::FrameKind;

double ParseNumber(const std::string& text) {
  if (text.empty()) return 0;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  return end == text.c_str() ? 0 : value;
}

bool IsGpuActivity(FrameKind kind) {
  return kind == FrameKind::kGpuKernel || kind == FrameKind::kGpuMemcpy ||
         kind == FrameKind::kGpuMemset || kind == FrameKind::kGpuSync;
}

}  // namespace

ProfileView::ProfileView(const analysis::ProfileTree& tree) : tree_(tree) {
  metrics_.calls = tree.FindMetric("calls");
  metrics_.cpu_time = tree.FindMetric("cpu_time");
  metrics_.wall_time = tree.FindMetric("wall_time");
  metrics_.gpu_time = tree.FindMetric("gpu_time");
  metrics_.sync_time = tree.FindMetric("sync_time");
  metrics_.bytes = tree.FindMetric("bytes");
  metrics_.blocks = tree.FindMetric("blocks");
  metrics_.threads_per_block = tree.FindMetric("threads_per_block");
  metrics_.occupancy = tree.FindMetric("occupancy");
  metrics_.peak_live_bytes = tree.FindMetric("gpu_peak_live_bytes");

  double metadata_busy = 0;
  for (const analysis::SourceInfo& source : tree.sources()) {
    double start = ParseNumber(source.Metadata("start_time_ns"));
    double end = ParseNumber(source.Metadata("end_time_ns"));
    if (end > start) wall_ns_ = std::max(wall_ns_, end - start);
    for (int device = 0; device < 64; ++device) {
      std::string prefix = "gpu" + std::to_string(device) + "_";
      std::string busy = source.Metadata(prefix + "busy_ns");
      std::string cc = source.Metadata(prefix + "compute_capability");
      std::string sms = source.Metadata(prefix + "sm_count");
      std::string total_memory = source.Metadata(prefix + "memory_total_bytes");
      if (busy.empty() && cc.empty() && sms.empty() && total_memory.empty()) {
        if (device >= 8) break;  // devices are numbered densely in practice
        continue;
      }
      metadata_busy += ParseNumber(busy);
      double first = ParseNumber(source.Metadata(prefix + "first_start_ns"));
      double last = ParseNumber(source.Metadata(prefix + "last_end_ns"));
      if (last > first && first > 0)
        gpu_span_ns_ = std::max(gpu_span_ns_, last - first);
      double capability = ParseNumber(cc);
      if (capability > 0 &&
          (compute_capability_ == 0 || capability < compute_capability_)) {
        compute_capability_ = capability;
      }
      double sm = ParseNumber(sms);
      if (sm > 0 && (sm_count_ == 0 || sm < sm_count_)) sm_count_ = sm;
      double total = ParseNumber(total_memory);
      double held = ParseNumber(source.Metadata(prefix + "memory_reserved_peak_bytes"));
      if (held <= 0) held = ParseNumber(source.Metadata(prefix + "memory_peak_bytes"));
      if (total > 0 && held > 0) memory_pressure_ = std::max(memory_pressure_, held / total);
    }
  }
  double gpu_total = metrics_.gpu_time ? tree.Total(*metrics_.gpu_time) : 0;
  // A device the program never used (a CPU program on a GPU machine) is no
  // GPU activity: the GPU rules have nothing to say about it.
  has_gpu_ = metadata_busy > 0 || gpu_total > 0;
  gpu_busy_ns_ = metadata_busy > 0 ? metadata_busy : gpu_total;
}

double ProfileView::Exclusive(NodeIndex node,
                              std::optional<MetricIndex> metric) const {
  return metric ? tree_.Exclusive(node, *metric) : 0;
}

double ProfileView::Inclusive(NodeIndex node,
                              std::optional<MetricIndex> metric) const {
  return metric ? tree_.Inclusive(node, *metric) : 0;
}

double ProfileView::Count(NodeIndex node,
                          std::optional<MetricIndex> metric) const {
  return metric ? static_cast<double>(tree_.stats(node, *metric).count) : 0;
}

std::optional<MetricIndex> ProfileView::host_time_metric() const {
  if (metrics_.wall_time && tree_.Total(*metrics_.wall_time) > 0) {
    return metrics_.wall_time;
  }
  return metrics_.cpu_time;
}

double ProfileView::HostTime(NodeIndex node) const {
  return Inclusive(node, host_time_metric());
}

NodeIndex ProfileView::UserFrame(NodeIndex node) const {
  NodeIndex nearest = kNoNode;
  for (NodeIndex at = node;; at = tree_.node(at).parent) {
    const analysis::Frame& frame = tree_.frame_of(at);
    if (frame.kind == FrameKind::kPythonFrame) {
      if (nearest == kNoNode) nearest = at;
      if (analysis::IsUserCodeFile(frame.file)) return at;
    }
    if (at == analysis::ProfileTree::kRootNode) break;
  }
  return nearest;
}

NodeIndex ProfileView::OuterOperator(NodeIndex node) const {
  NodeIndex outer = kNoNode;
  for (NodeIndex at = node;; at = tree_.node(at).parent) {
    FrameKind kind = tree_.frame_of(at).kind;
    if (kind == FrameKind::kOperator) outer = at;
    // The operator nearest the Python code is the one the user called.
    if (kind == FrameKind::kPythonFrame && outer != kNoNode) break;
    if (at == analysis::ProfileTree::kRootNode) break;
  }
  return outer;
}

std::string ProfileView::PhaseOf(NodeIndex node) const {
  for (NodeIndex at = node;; at = tree_.node(at).parent) {
    const analysis::Frame& frame = tree_.frame_of(at);
    if (frame.kind == FrameKind::kPhase) {
      if (frame.name.find("backward") != std::string::npos) return "backward";
      if (frame.name.find("forward") != std::string::npos) return "forward";
    }
    if (at == analysis::ProfileTree::kRootNode) break;
  }
  return "";
}

bool ProfileView::UnderPythonFunction(NodeIndex node,
                                      std::string_view name_prefix,
                                      std::string_view file_part) const {
  for (NodeIndex at = node;; at = tree_.node(at).parent) {
    const analysis::Frame& frame = tree_.frame_of(at);
    if (frame.kind == FrameKind::kPythonFrame &&
        frame.name.starts_with(name_prefix) &&
        frame.file.find(file_part) != std::string::npos) {
      return true;
    }
    if (at == analysis::ProfileTree::kRootNode) break;
  }
  return false;
}

FindingContext ProfileView::ContextOf(NodeIndex node) const {
  FindingContext context;
  context.node = node;
  NodeIndex user = UserFrame(node);
  if (user != kNoNode) {
    const analysis::Frame& frame = tree_.frame_of(user);
    context.file = frame.file;
    context.line = frame.line;
    context.function = frame.name;
  }
  NodeIndex op = OuterOperator(node);
  if (op != kNoNode) context.op = tree_.frame_of(op).name;
  context.phase = PhaseOf(node);
  if (IsGpuActivity(tree_.frame_of(node).kind)) {
    context.kernel = tree_.frame_of(node).name;
  }
  for (NodeIndex at = node; at != analysis::ProfileTree::kRootNode;
       at = tree_.node(at).parent) {
    context.path.push_back(analysis::DisplayName(tree_.frame_of(at)));
  }
  std::reverse(context.path.begin(), context.path.end());
  return context;
}

double ProfileView::BasisNs() const {
  if (wall_ns_ > 0) return wall_ns_;
  return HostTime(analysis::ProfileTree::kRootNode);
}

const char* ProfileView::BasisName() const {
  return wall_ns_ > 0 ? "profiled wall time" : "profiled host time";
}

std::string ShortLocation(const FindingContext& context) {
  if (context.file.empty()) return "";
  size_t slash = context.file.rfind('/');
  std::string name = slash == std::string::npos
                         ? context.file
                         : context.file.substr(slash + 1);
  if (context.line > 0) name += ":" + std::to_string(context.line);
  return name;
}

}  // namespace deepcontext::analyzer

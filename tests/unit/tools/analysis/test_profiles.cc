#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::analysis::testing {

using format::FrameKind;

format::MetricId ProfileBuilder::Metric(const std::string& name,
                                        const std::string& unit,
                                        const std::string& description) {
  for (format::MetricId i = 0; i < profile_.metrics.size(); ++i) {
    if (profile_.metrics[i].name == name) return i;
  }
  profile_.metrics.push_back({name, unit, description});
  return static_cast<format::MetricId>(profile_.metrics.size() - 1);
}

format::StringId ProfileBuilder::Intern(const std::string& text) {
  for (format::StringId i = 0; i < profile_.strings.size(); ++i) {
    if (profile_.strings[i] == text) return i;
  }
  profile_.strings.push_back(text);
  return static_cast<format::StringId>(profile_.strings.size() - 1);
}

format::NodeId ProfileBuilder::Add(format::NodeId parent, FrameKind kind,
                                   const std::string& name,
                                   const std::string& file, uint32_t line) {
  profile_.nodes.push_back(
      format::Node{parent, kind, Intern(name), Intern(file), line});
  return static_cast<format::NodeId>(profile_.nodes.size() - 1);
}

void ProfileBuilder::Value(format::NodeId node, const std::string& metric,
                           double sum, uint64_t count) {
  double mean = count == 0 ? 0 : sum / static_cast<double>(count);
  profile_.values.push_back(format::MetricValue{node, Metric(metric), count,
                                                sum, mean / 2, mean * 2});
}

void ProfileBuilder::Meta(const std::string& key, const std::string& value) {
  profile_.metadata.emplace_back(key, value);
}

std::optional<NodeIndex> FindNode(const ProfileTree& tree,
                                  const std::vector<std::string>& path) {
  NodeIndex current = ProfileTree::kRootNode;
  for (const std::string& name : path) {
    std::optional<NodeIndex> next;
    for (NodeIndex child : tree.node(current).children) {
      if (DisplayName(tree.frame_of(child)) == name) next = child;
    }
    if (!next) return std::nullopt;
    current = *next;
  }
  return current;
}

format::Profile MakeTrainingProfile(TrainingNodes* out) {
  ProfileBuilder b;
  b.Metric("calls", "count", "number of calls");
  b.Metric("cpu_time", "ns", "thread CPU time");
  b.Meta("command_line", "python train.py --epochs 1");
  b.Meta("pid", "4242");
  b.Meta("host", "gpu01");
  b.Meta("rank", "0");
  b.Meta("start_time_ns", "1000000000");
  b.Meta("end_time_ns", "3000000000");
  b.Meta("python_version", "3.11.2");

  TrainingNodes n{};
  n.main_thread = b.Add(0, FrameKind::kThread, "main");
  n.module = b.Add(n.main_thread, FrameKind::kPythonFrame, "<module>",
                   "/home/user/proj/train.py", 40);
  n.train_step = b.Add(n.module, FrameKind::kPythonFrame, "train_step",
                       "/home/user/proj/train.py", 22);
  n.forward = b.Add(n.train_step, FrameKind::kPythonFrame, "forward",
                    "/usr/lib/python3/site-packages/mylib/model.py", 10);
  n.phase_forward = b.Add(n.forward, FrameKind::kPhase, "forward");
  n.conv2d = b.Add(n.phase_forward, FrameKind::kOperator, "aten::conv2d");
  n.convolution = b.Add(n.conv2d, FrameKind::kOperator, "aten::convolution");
  n.phase_backward = b.Add(n.forward, FrameKind::kPhase, "[backward]");
  n.conv_backward_op =
      b.Add(n.phase_backward, FrameKind::kOperator, "ConvolutionBackward0");
  n.conv_backward = b.Add(n.conv_backward_op, FrameKind::kOperator,
                          "aten::convolution_backward");
  n.autograd_thread = b.Add(0, FrameKind::kThread, "pt_autograd_0");
  n.autograd_conv_backward_op =
      b.Add(n.autograd_thread, FrameKind::kOperator, "ConvolutionBackward0");
  n.autograd_conv_backward =
      b.Add(n.autograd_conv_backward_op, FrameKind::kOperator,
            "aten::convolution_backward");

  b.Value(n.module, "cpu_time", 1 * kMs);
  b.Value(n.train_step, "cpu_time", 2 * kMs);
  b.Value(n.forward, "cpu_time", 3 * kMs);
  b.Value(n.conv2d, "cpu_time", 4 * kMs, 10);
  b.Value(n.convolution, "cpu_time", 50 * kMs, 10);
  b.Value(n.conv_backward_op, "cpu_time", 5 * kMs, 10);
  b.Value(n.conv_backward, "cpu_time", 30 * kMs, 10);
  b.Value(n.autograd_conv_backward_op, "cpu_time", 1 * kMs, 2);
  b.Value(n.autograd_conv_backward, "cpu_time", 4 * kMs, 2);
  for (format::NodeId op :
       {n.conv2d, n.convolution, n.conv_backward_op, n.conv_backward}) {
    b.Value(op, "calls", 10, 10);
  }
  b.Value(n.autograd_conv_backward_op, "calls", 2, 2);
  b.Value(n.autograd_conv_backward, "calls", 2, 2);
  if (out != nullptr) *out = n;
  return b.profile();
}

format::Profile MakeTrainingProfileOf(const std::string& pid,
                                      const std::string& rank) {
  format::Profile profile = MakeTrainingProfile();
  for (auto& [key, value] : profile.metadata) {
    if (key == "pid") value = pid;
    if (key == "rank") value = rank;
  }
  return profile;
}

}  // namespace deepcontext::analysis::testing

#include "runtime/xla/op_path.h"

namespace deepcontext::xla {
namespace {

enum class Phase { kNone, kForward, kBackward };

bool StripWrapper(std::string_view* part, std::string_view wrapper) {
  if (part->size() > wrapper.size() + 1 && part->substr(0, wrapper.size()) == wrapper &&
      (*part)[wrapper.size()] == '(' && part->back() == ')') {
    *part = part->substr(wrapper.size() + 1, part->size() - wrapper.size() - 2);
    return true;
  }
  return false;
}

// Removes the autodiff wrappers of one component, noting the phase they
// mean: transpose(jvp(layer2)) -> layer2, backward.
std::string_view Unwrap(std::string_view part, Phase* phase) {
  for (bool changed = true; changed;) {
    changed = false;
    if (StripWrapper(&part, "transpose")) {
      *phase = Phase::kBackward;
      changed = true;
    } else if (StripWrapper(&part, "jvp")) {
      if (*phase == Phase::kNone) *phase = Phase::kForward;
      changed = true;
    }
  }
  return part;
}

}  // namespace

std::vector<std::string_view> SplitNameStack(std::string_view op_name) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= op_name.size(); ++i) {
    if (i == op_name.size() || (op_name[i] == '/' && depth == 0)) {
      if (i > start) parts.push_back(op_name.substr(start, i - start));
      start = i + 1;
    } else if (op_name[i] == '(') {
      ++depth;
    } else if (op_name[i] == ')' && depth > 0) {
      --depth;
    }
  }
  return parts;
}

gpu::ContextId WalkPath(gpu::ContextSink& sink, gpu::ContextId base,
                        const std::vector<PathNode>& path) {
  gpu::ContextId context = base;
  for (const PathNode& node : path) {
    context = node.kind == gpu::GpuNodeKind::kPython
                  ? sink.ChildAt(context, node.kind, node.name, node.file, node.line)
                  : sink.Child(context, node.kind, node.name);
    if (context == 0) return 0;
  }
  return context;
}

std::vector<PathNode> OpPath(std::string_view op_name, std::string_view hlo_op) {
  std::vector<std::string_view> parts = SplitNameStack(op_name);
  if (!parts.empty() && parts.front().substr(0, 4) == "jit(") parts.erase(parts.begin());
  Phase phase = Phase::kNone;
  std::vector<std::string_view> names;
  for (std::string_view part : parts) {
    std::string_view name = Unwrap(part, &phase);
    if (!name.empty()) names.push_back(name);
  }
  std::vector<PathNode> path;
  if (phase == Phase::kForward) path.push_back({gpu::GpuNodeKind::kPhase, "[forward]"});
  if (phase == Phase::kBackward) path.push_back({gpu::GpuNodeKind::kPhase, "[backward]"});
  for (size_t i = 0; i < names.size(); ++i) {
    const bool primitive = i + 1 == names.size();
    path.push_back({primitive ? gpu::GpuNodeKind::kOperator : gpu::GpuNodeKind::kUserScope,
                    std::string(names[i])});
  }
  if (!hlo_op.empty()) path.push_back({gpu::GpuNodeKind::kOperator, std::string(hlo_op)});
  return path;
}

}  // namespace deepcontext::xla

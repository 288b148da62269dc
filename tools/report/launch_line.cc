#include "tools/report/launch_line.h"

#include "tools/report/location.h"

namespace deepcontext::report {

std::string KernelLaunchLine(const analysis::ProfileTree& tree, analysis::NodeIndex node) {
  analysis::NodeIndex chosen = analysis::ProfileTree::kRootNode;
  while (node != analysis::ProfileTree::kRootNode) {
    node = tree.node(node).parent;
    const analysis::Frame& frame = tree.frame_of(node);
    if (frame.kind != format::FrameKind::kPythonFrame) continue;
    if (chosen == analysis::ProfileTree::kRootNode) chosen = node;
    if (analysis::IsUserCodeFile(frame.file)) {
      chosen = node;
      break;
    }
  }
  if (chosen == analysis::ProfileTree::kRootNode) return "";
  const analysis::Frame& frame = tree.frame_of(chosen);
  std::string text = analysis::DisplayName(frame);
  const std::string location = FormatLocation(frame);
  return location.empty() ? text : text + " (" + location + ")";
}

}  // namespace deepcontext::report

#include "tools/export/folded_export.h"

#include <cmath>
#include <optional>
#include <vector>

#include "tools/analysis/frame.h"
#include "tools/analysis/metric_selection.h"

namespace deepcontext::exporter {

namespace {

// ';' separates frames and '\n' stacks, so neither may appear in a name.
std::string FoldedName(const analysis::Frame& frame) {
  std::string name = analysis::DisplayName(frame);
  for (char& c : name) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (frame.kind == format::FrameKind::kPythonFrame && frame.line > 0) {
    name += " (" + frame.file + ":" + std::to_string(frame.line) + ")";
  }
  return name;
}

}  // namespace

std::string RenderFolded(const analysis::ProfileTree& tree) {
  std::optional<analysis::MetricIndex> metric = analysis::DefaultMetric(tree);
  if (!metric) return "";
  // Each node's stack prefix is its parent's plus its own name; parents come
  // before children, so one forward pass builds them all. Only the prefix
  // lengths are kept per node: the text is rebuilt along the path.
  std::vector<std::string> names(tree.frames().size());
  for (size_t i = 0; i < names.size(); ++i) {
    names[i] = FoldedName(tree.frames()[i]);
  }
  std::string out;
  std::vector<analysis::NodeIndex> path;
  for (analysis::NodeIndex i = 1; i < tree.size(); ++i) {
    double value = std::round(tree.Exclusive(i, *metric));
    if (value <= 0) continue;
    path.clear();
    for (analysis::NodeIndex n = i; n != analysis::ProfileTree::kRootNode;
         n = tree.node(n).parent) {
      path.push_back(n);
    }
    for (size_t k = path.size(); k-- > 0;) {
      out += names[tree.node(path[k]).frame];
      out += k == 0 ? ' ' : ';';
    }
    out += std::to_string(static_cast<unsigned long long>(value));
    out += '\n';
  }
  return out;
}

}  // namespace deepcontext::exporter

#include "tools/diff/diff_render.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/report/location.h"
#include "tools/report/text_table.h"
#include "tools/report/value_format.h"

namespace deepcontext::diff {

namespace {

using analysis::Frame;
using analysis::NodeIndex;
using analysis::ProfileTree;

// The tree and node a context is shown from: the after side when present.
struct Side {
  const ProfileTree* tree;
  NodeIndex node;
};

Side SideOf(const ContextDiff& context, const ProfileTree& before,
            const ProfileTree& after) {
  if (context.after) return {&after, *context.after};
  return {&before, *context.before};
}

// "train_step (train.py:22)": the nearest Python frame above the node.
std::string CallerText(const Side& side) {
  NodeIndex node = side.tree->node(side.node).parent;
  while (node != ProfileTree::kRootNode) {
    const Frame& frame = side.tree->frame_of(node);
    if (frame.kind == format::FrameKind::kPythonFrame) {
      std::string text = analysis::DisplayName(frame);
      std::string location = report::FormatLocation(frame);
      return location.empty() ? text : text + " (" + location + ")";
    }
    node = side.tree->node(node).parent;
  }
  return "";
}

std::string SignedValue(double value, const std::string& unit) {
  if (value == 0) return "0";
  return (value > 0 ? "+" : "-") + report::FormatValue(std::fabs(value), unit);
}

std::string RelativeText(double before, double after) {
  std::optional<double> relative = Relative(before, after);
  if (!relative) return after == 0 ? "-" : "new";
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", *relative * 100);
  return text;
}

nlohmann::json ValuesJson(double before, double after) {
  std::optional<double> relative = Relative(before, after);
  return {{"before", before},
          {"after", after},
          {"change", after - before},
          {"relative", relative ? nlohmann::json(*relative) : nlohmann::json()}};
}

nlohmann::json PathJson(const Side& side) {
  std::vector<NodeIndex> chain;
  for (NodeIndex node = side.node; node != ProfileTree::kRootNode;
       node = side.tree->node(node).parent) {
    chain.push_back(node);
  }
  nlohmann::json path = nlohmann::json::array();
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const Frame& frame = side.tree->frame_of(*it);
    path.push_back({{"kind", format::FrameKindName(frame.kind)},
                    {"name", frame.name},
                    {"file", frame.file},
                    {"line", frame.line}});
  }
  return path;
}

}  // namespace

std::string RenderDiffText(const ProfileTree& before, const ProfileTree& after,
                           const ProfileDiff& diff, const DiffOptions& options) {
  std::string out = "DeepContext diff\nBefore: " + options.before_name +
                    "\nAfter:  " + options.after_name + "\n\n";
  report::TextTable totals({{"Metric", report::TextTable::Align::kLeft},
                            {"Before"}, {"After"}, {"Change"}, {"Rel."}});
  for (size_t m = 0; m < diff.metrics.size(); ++m) {
    const std::string& unit = diff.metrics[m].unit;
    totals.AddRow({diff.metrics[m].name,
                   report::FormatValue(diff.before_totals[m], unit),
                   report::FormatValue(diff.after_totals[m], unit),
                   SignedValue(diff.after_totals[m] - diff.before_totals[m], unit),
                   RelativeText(diff.before_totals[m], diff.after_totals[m])});
  }
  out += totals.Render();

  const DiffMetric& metric = diff.metrics[options.metric];
  size_t added = 0, removed = 0;
  for (const ContextDiff& context : diff.contexts) {
    added += context.status == ContextStatus::kAdded;
    removed += context.status == ContextStatus::kRemoved;
  }
  out += "\nContexts: " + std::to_string(diff.contexts.size()) + " (" +
         std::to_string(added) + " added, " + std::to_string(removed) +
         " removed)\n\n";

  std::vector<size_t> ranked = RankByChange(diff, options.metric, options.top);
  out += "Contexts ranked by change of exclusive " + metric.name + "\n";
  if (ranked.empty()) {
    return out + "(no context's exclusive " + metric.name + " changed)\n";
  }
  report::TextTable table({{"#"}, {"Before"}, {"After"}, {"Change"}, {"Rel."},
                           {"Name", report::TextTable::Align::kLeft},
                           {"Location", report::TextTable::Align::kLeft},
                           {"From", report::TextTable::Align::kLeft}});
  for (size_t i = 0; i < ranked.size(); ++i) {
    const ContextDiff& context = diff.contexts[ranked[i]];
    const MetricChange& change = context.metrics[options.metric];
    Side side = SideOf(context, before, after);
    const Frame& frame = side.tree->frame_of(side.node);
    std::string relative =
        context.status == ContextStatus::kChanged
            ? RelativeText(change.before_exclusive, change.after_exclusive)
            : StatusName(context.status);
    table.AddRow({std::to_string(i + 1),
                  report::FormatValue(change.before_exclusive, metric.unit),
                  report::FormatValue(change.after_exclusive, metric.unit),
                  SignedValue(change.ExclusiveChange(), metric.unit), relative,
                  analysis::DisplayName(frame), report::FormatLocation(frame),
                  CallerText(side)});
  }
  table.FitToWidth(5, options.width);
  return out + table.Render();
}

std::string RenderDiffJson(const ProfileTree& before, const ProfileTree& after,
                           const ProfileDiff& diff, const DiffOptions& options) {
  nlohmann::json out;
  out["schema"] = "deepcontext-diff";
  out["version"] = 1;
  out["before"] = options.before_name;
  out["after"] = options.after_name;
  out["ranked_by"] = diff.metrics[options.metric].name;
  nlohmann::json metrics = nlohmann::json::array();
  for (size_t m = 0; m < diff.metrics.size(); ++m) {
    metrics.push_back({{"name", diff.metrics[m].name},
                       {"unit", diff.metrics[m].unit},
                       {"total", ValuesJson(diff.before_totals[m],
                                            diff.after_totals[m])}});
  }
  out["metrics"] = std::move(metrics);

  // Ranked contexts first, then those that changed only in other metrics.
  std::vector<size_t> order = RankByChange(diff, options.metric, 0);
  std::vector<bool> listed(diff.contexts.size(), false);
  for (size_t index : order) listed[index] = true;
  for (size_t i = 0; i < diff.contexts.size(); ++i) {
    if (listed[i]) continue;
    for (const MetricChange& change : diff.contexts[i].metrics) {
      if (change.ExclusiveChange() != 0 || change.InclusiveChange() != 0 ||
          diff.contexts[i].status != ContextStatus::kChanged) {
        order.push_back(i);
        break;
      }
    }
  }
  nlohmann::json contexts = nlohmann::json::array();
  for (size_t index : order) {
    const ContextDiff& context = diff.contexts[index];
    nlohmann::json values = nlohmann::json::object();
    for (size_t m = 0; m < diff.metrics.size(); ++m) {
      const MetricChange& change = context.metrics[m];
      values[diff.metrics[m].name] = {
          {"exclusive", ValuesJson(change.before_exclusive, change.after_exclusive)},
          {"inclusive", ValuesJson(change.before_inclusive, change.after_inclusive)}};
    }
    contexts.push_back({{"status", StatusName(context.status)},
                        {"path", PathJson(SideOf(context, before, after))},
                        {"metrics", std::move(values)}});
  }
  out["contexts"] = std::move(contexts);
  return out.dump(1) + "\n";
}

}  // namespace deepcontext::diff

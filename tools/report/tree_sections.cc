#include "tools/report/tree_sections.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tools/analysis/bottom_up.h"
#include "tools/report/folded_callers.h"
#include "tools/report/folded_tree.h"
#include "tools/report/location.h"
#include "tools/report/name_shortening.h"
#include "tools/report/text_table.h"
#include "tools/report/value_format.h"

namespace deepcontext::report {

namespace {

using analysis::Frame;

// Lines drawn in front of a row's name to show where it sits in the tree.
struct TreeGuides {
  const char* branch;  // before a child that has later siblings
  const char* last;    // before the last child
  const char* pipe;    // continues a parent that has later siblings
  const char* blank;   // under a parent that was the last child
};

constexpr TreeGuides kUnicodeGuides{"├─ ", "└─ ", "│  ", "   "};
constexpr TreeGuides kAsciiGuides{"|- ", "`- ", "|  ", "   "};

// Bound on the bottom-up tree the report builds.
constexpr size_t kMaxBottomUpNodes = 2'000'000;

// Deepest level whose indentation still grows (3 columns per level).
constexpr int kMaxGuideDepth = 24;

// How a tree is walked and turned into rows, so top-down and bottom-up share
// the pruning and guide logic.
struct TreeShape {
  uint32_t root = 0;
  // Children of a node, already in display order.
  std::function<std::vector<uint32_t>(uint32_t)> children;
  // The value compared with the pruning threshold.
  std::function<double(uint32_t)> prune_value;
  // Adds the row of node with its guided name.
  std::function<void(uint32_t, const std::string&)> add_row;
};

// What the walk left out, for the note under the table.
struct Hidden {
  size_t below_threshold = 0;
  size_t below_depth = 0;
};

Hidden WalkTree(const SectionContext& context, const TreeShape& shape) {
  const TreeGuides& guides =
      context.options.unicode ? kUnicodeGuides : kAsciiGuides;
  const double threshold = context.Threshold();
  const int max_depth = context.options.depth;
  Hidden hidden;
  auto visible = [&](uint32_t node) {
    if (context.options.min_percent <= 0) return true;
    double value = std::fabs(shape.prune_value(node));
    return value > 0 && value >= threshold;
  };

  struct Pending {
    uint32_t node;
    int depth;           // 1 for top-level rows
    std::string prefix;  // guides inherited from the ancestors
    bool last;
  };
  std::vector<Pending> stack;
  auto push_children = [&](uint32_t node, int depth,
                           const std::string& prefix) {
    std::vector<uint32_t> shown;
    for (uint32_t child : shape.children(node)) {
      if (visible(child)) {
        shown.push_back(child);
      } else {
        ++hidden.below_threshold;
      }
    }
    if (!shown.empty() && max_depth > 0 && depth > max_depth) {
      hidden.below_depth += shown.size();
      return;
    }
    // Pushed in reverse so the first child is rendered first.
    for (size_t i = shown.size(); i-- > 0;) {
      stack.push_back({shown[i], depth, prefix, i + 1 == shown.size()});
    }
  };

  push_children(shape.root, 1, "");
  while (!stack.empty()) {
    Pending item = std::move(stack.back());
    stack.pop_back();
    std::string guide;
    std::string child_prefix;
    if (item.depth > kMaxGuideDepth) {
      // Past this depth the indentation stops growing and the level is
      // written out, so deep recursion cannot push names off any screen.
      guide = item.prefix + "[" + std::to_string(item.depth) + "] " +
              (item.last ? guides.last : guides.branch);
      child_prefix = item.prefix;
    } else if (item.depth > 1) {
      guide = item.prefix + (item.last ? guides.last : guides.branch);
      child_prefix = item.prefix + (item.last ? guides.blank : guides.pipe);
    }
    shape.add_row(item.node, guide);
    push_children(item.node, item.depth + 1, child_prefix);
  }
  return hidden;
}

std::string HiddenNote(const SectionContext& context, const Hidden& hidden) {
  std::string note;
  if (hidden.below_threshold > 0) {
    note += '(';
    note += SectionContext::Counted(hidden.below_threshold, "node");
    note += " below " + context.MinPercentText() +
            "% of the total not shown; --min-percent 0 shows all)\n";
  }
  if (hidden.below_depth > 0) {
    note += '(';
    note += SectionContext::Counted(hidden.below_depth, "node");
    note += " deeper than --depth " + std::to_string(context.options.depth) +
            " not shown)\n";
  }
  return note;
}

// The columns both tree views end with.
void AddNameColumns(std::vector<TextTable::Column>& columns) {
  columns.push_back({"Name", TextTable::Align::kLeft, 0,
                     TextTable::kMinShownText, &ShortenName});
  columns.push_back(
      {"Location", TextTable::Align::kLeft, 0, 0, &ShortenLocation});
}

std::string RenderTable(const SectionContext& context, const TextTable& table,
                        const Hidden& hidden, size_t rows) {
  if (rows == 0) {
    return "(no node reaches " + context.MinPercentText() +
           "% of the total)\n" + HiddenNote(context, hidden);
  }
  return table.Render(context.options.color) + HiddenNote(context, hidden);
}

}  // namespace

std::string RenderTopDown(const SectionContext& context) {
  std::vector<TextTable::Column> columns = {
      {"Inclusive"}, {"Excl."}, {"%Total"}};
  if (context.calls) columns.push_back({"Calls"});
  const size_t name_column = columns.size();
  AddNameColumns(columns);
  TextTable table(columns);
  size_t rows = 0;

  FoldedTree view(context.tree, context.metric, context.calls,
                  context.folding());
  TreeShape shape;
  shape.root = FoldedTree::kRootNode;
  shape.children = [&](uint32_t node) {
    std::vector<uint32_t> children = view.Children(node);
    std::stable_sort(children.begin(), children.end(),
                     [&](uint32_t a, uint32_t b) {
                       return view.Inclusive(a) > view.Inclusive(b);
                     });
    return children;
  };
  shape.prune_value = [&](uint32_t node) { return view.Inclusive(node); };
  shape.add_row = [&](uint32_t node, const std::string& guide) {
    const Frame& frame = view.frame(node);
    double inclusive = view.Inclusive(node);
    std::vector<std::string> cells = {context.Value(inclusive),
                                      context.Value(view.Exclusive(node)),
                                      FormatPercent(inclusive, context.total)};
    if (context.calls) cells.push_back(context.Calls(view.Calls(node)));
    std::vector<size_t> kept_prefix(cells.size(), 0);
    kept_prefix.push_back(guide.size());
    cells.push_back(guide + analysis::DisplayName(frame));
    cells.push_back(context.Location(frame));
    table.AddRow(std::move(cells), std::move(kept_prefix));
    ++rows;
  };
  Hidden hidden = WalkTree(context, shape);
  context.FitTable(table, name_column);
  return context.Title("Top-down view (inclusive " + context.metric_name +
                       ")") +
         "\n" + RenderTable(context, table, hidden, rows);
}

std::string RenderBottomUp(const SectionContext& context) {
  // Only what can be shown is built; one level past the depth limit is kept
  // so the note can say how many rows the limit hid.
  analysis::BottomUpLimits limits;
  if (context.options.min_percent > 0) limits.min_value = context.Threshold();
  if (context.options.depth > 0) {
    // Folded wrappers do not count as levels: torch 2 puts two around every
    // module call, so three built levels may make one shown.
    const uint32_t per_level = context.folding() == Folding::kNone ? 1 : 3;
    limits.max_depth =
        (static_cast<uint32_t>(context.options.depth) + 1) * per_level;
  }
  // Without pruning the full tree holds one node per (leaf, ancestor) pair,
  // which deep programs make larger than memory; far more than readable.
  limits.max_nodes = kMaxBottomUpNodes;
  analysis::BottomUpTree callers = analysis::BottomUpTree::Build(
      context.tree, context.metric, context.calls, limits);
  std::vector<TextTable::Column> columns = {{"Excl."}, {"%Total"}};
  if (context.calls) columns.push_back({"Calls"});
  const size_t name_column = columns.size();
  AddNameColumns(columns);
  TextTable table(columns);
  size_t rows = 0;

  FoldedCallers view(context.tree, callers, context.folding());
  TreeShape shape;
  shape.root = FoldedCallers::kRootNode;
  shape.children = [&](uint32_t node) {
    std::vector<uint32_t> children = view.Children(node);
    // Merged callers may change the order: largest first again.
    std::stable_sort(
        children.begin(), children.end(),
        [&](uint32_t a, uint32_t b) { return view.Value(a) > view.Value(b); });
    return children;
  };
  shape.prune_value = [&](uint32_t node) { return view.Value(node); };
  shape.add_row = [&](uint32_t node, const std::string& guide) {
    const Frame& frame = view.frame(node);
    std::vector<std::string> cells = {
        context.Value(view.Value(node)),
        FormatPercent(view.Value(node), context.total)};
    if (context.calls) cells.push_back(context.Calls(view.Calls(node)));
    std::vector<size_t> kept_prefix(cells.size(), 0);
    kept_prefix.push_back(guide.size());
    cells.push_back(guide + analysis::DisplayName(frame));
    cells.push_back(context.Location(frame));
    table.AddRow(std::move(cells), std::move(kept_prefix));
    ++rows;
  };
  Hidden hidden = WalkTree(context, shape);
  context.FitTable(table, name_column);
  std::string truncated =
      callers.truncated() ? "(stopped expanding callers after " +
                                std::to_string(kMaxBottomUpNodes) +
                                " nodes; raise --min-percent or set --depth)\n"
                          : "";
  return context.Title("Bottom-up view (exclusive " + context.metric_name +
                       " of each frame, split by its callers)") +
         "\n" + RenderTable(context, table, hidden, rows) + truncated;
}

}  // namespace deepcontext::report

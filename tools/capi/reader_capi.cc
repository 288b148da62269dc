#include "tools/capi/reader_capi.h"

#include <exception>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "format/dctx_file.h"
#include "tools/analysis/profile_tree.h"
#include "tools/analyzer/analyzer.h"
#include "tools/analyzer/findings_json.h"
#include "tools/analyzer/findings_text.h"
#include "tools/analyzer/profile_view.h"
#include "tools/diff/diff_render.h"
#include "tools/diff/profile_diff.h"

struct dc_reader {
  std::string error;
  std::optional<deepcontext::analysis::ProfileTree> tree;
  std::vector<uint32_t> parents, names, files, lines;
  std::vector<uint8_t> kinds;
  std::string string_data;
  std::vector<uint64_t> string_offsets{0};
  // metric-major: one column of node values per metric, filled on first
  // request (most callers read one or two metrics of many).
  mutable std::vector<std::vector<double>> exclusive, inclusive, counts;
  std::string paths;  // as opened, joined by ", " (the diff names them)
  std::string sources_json, analysis_output, diff_output;
};

namespace {

using deepcontext::analysis::ProfileTree;
namespace analyzer = deepcontext::analyzer;

// Frames share strings; the table interns names and files once.
void BuildColumns(dc_reader& r) {
  const ProfileTree& tree = *r.tree;
  const size_t n = tree.size();
  r.parents.resize(n);
  r.kinds.resize(n);
  r.names.resize(n);
  r.files.resize(n);
  r.lines.resize(n);
  std::vector<uint32_t> frame_name(tree.frames().size());
  std::vector<uint32_t> frame_file(tree.frames().size());
  std::unordered_map<std::string_view, uint32_t> ids;
  auto intern = [&](const std::string& text) -> uint32_t {
    auto [it, inserted] = ids.try_emplace(
        text, static_cast<uint32_t>(r.string_offsets.size() - 1));
    if (inserted) {
      r.string_data += text;
      r.string_offsets.push_back(r.string_data.size());
    }
    return it->second;
  };
  intern("");
  for (size_t f = 0; f < tree.frames().size(); ++f) {
    frame_name[f] = intern(tree.frames()[f].name);
    frame_file[f] = intern(tree.frames()[f].file);
  }
  for (size_t i = 0; i < n; ++i) {
    const auto& node = tree.node(static_cast<uint32_t>(i));
    const auto& frame = tree.frames()[node.frame];
    r.parents[i] = node.parent;
    r.kinds[i] = static_cast<uint8_t>(frame.kind);
    r.names[i] = frame_name[node.frame];
    r.files[i] = frame_file[node.frame];
    r.lines[i] = frame.line;
  }
  const size_t metrics = tree.metrics().size();
  r.exclusive.resize(metrics);
  r.inclusive.resize(metrics);
  r.counts.resize(metrics);
}

enum class Column { kExclusive, kInclusive, kCounts };

const double* MetricColumn(const dc_reader* r, uint32_t metric, Column which) {
  if (!r->tree || metric >= r->tree->metrics().size()) return nullptr;
  auto& columns = which == Column::kExclusive   ? r->exclusive
                  : which == Column::kInclusive ? r->inclusive
                                                : r->counts;
  std::vector<double>& column = columns[metric];
  const size_t n = r->tree->size();
  if (column.size() != n) {
    column.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const auto& stats = r->tree->stats(static_cast<uint32_t>(i), metric);
      column[i] = which == Column::kExclusive   ? stats.sum
                  : which == Column::kInclusive ? stats.inclusive
                                                : static_cast<double>(stats.count);
    }
  }
  return column.data();
}

std::vector<std::string> SplitCommas(const char* text) {
  std::vector<std::string> parts;
  if (text == nullptr) return parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ',')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

}  // namespace

extern "C" {

dc_reader* dc_reader_open(const char* const* paths, int32_t count) {
  auto* reader = new (std::nothrow) dc_reader;
  if (reader == nullptr) return nullptr;
  try {
    std::vector<deepcontext::format::Profile> reads;
    std::vector<std::string> names;
    for (int32_t i = 0; i < count; ++i) {
      deepcontext::StatusOr<deepcontext::format::Profile> read =
          deepcontext::format::ReadProfileFile(paths[i]);
      if (!read.ok()) {
        reader->error +=
            (reader->error.empty() ? "" : "\n") + read.status().message();
        continue;
      }
      reads.push_back(std::move(*read));
      names.emplace_back(paths[i]);
      reader->paths += (reader->paths.empty() ? "" : ", ") + names.back();
    }
    if (count <= 0) reader->error = "no profile given";
    if (!reader->error.empty()) return reader;
    std::vector<deepcontext::analysis::ProfileInput> inputs;
    for (size_t i = 0; i < reads.size(); ++i)
      inputs.push_back({&reads[i], names[i]});
    reader->tree.emplace(ProfileTree::FromProfiles(inputs));
    BuildColumns(*reader);
  } catch (const std::exception& e) {
    reader->error = e.what();
    reader->tree.reset();
  }
  return reader;
}

const char* dc_reader_error(const dc_reader* r) { return r->error.c_str(); }
void dc_reader_close(dc_reader* r) { delete r; }
uint32_t dc_reader_node_count(const dc_reader* r) {
  return static_cast<uint32_t>(r->parents.size());
}
const uint32_t* dc_reader_parents(const dc_reader* r) {
  return r->parents.data();
}
const uint8_t* dc_reader_kinds(const dc_reader* r) { return r->kinds.data(); }
const uint32_t* dc_reader_names(const dc_reader* r) { return r->names.data(); }
const uint32_t* dc_reader_files(const dc_reader* r) { return r->files.data(); }
const uint32_t* dc_reader_lines(const dc_reader* r) { return r->lines.data(); }
uint32_t dc_reader_string_count(const dc_reader* r) {
  return static_cast<uint32_t>(r->string_offsets.size() - 1);
}
const char* dc_reader_string_data(const dc_reader* r) {
  return r->string_data.data();
}
const uint64_t* dc_reader_string_offsets(const dc_reader* r) {
  return r->string_offsets.data();
}
uint32_t dc_reader_metric_count(const dc_reader* r) {
  return r->tree ? static_cast<uint32_t>(r->tree->metrics().size()) : 0;
}
const char* dc_reader_metric_name(const dc_reader* r, uint32_t m) {
  return m < dc_reader_metric_count(r) ? r->tree->metrics()[m].name.c_str()
                                       : "";
}
const char* dc_reader_metric_unit(const dc_reader* r, uint32_t m) {
  return m < dc_reader_metric_count(r) ? r->tree->metrics()[m].unit.c_str()
                                       : "";
}
const double* dc_reader_exclusive(const dc_reader* r, uint32_t m) {
  return MetricColumn(r, m, Column::kExclusive);
}
const double* dc_reader_inclusive(const dc_reader* r, uint32_t m) {
  return MetricColumn(r, m, Column::kInclusive);
}
const double* dc_reader_counts(const dc_reader* r, uint32_t m) {
  return MetricColumn(r, m, Column::kCounts);
}

const char* dc_reader_sources_json(dc_reader* r) {
  nlohmann::ordered_json sources = nlohmann::ordered_json::array();
  if (r->tree) {
    for (const auto& source : r->tree->sources()) {
      nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
      for (const auto& [key, value] : source.metadata) {
        if (!metadata.contains(key)) metadata[key] = value;
      }
      sources.push_back({{"path", source.path}, {"metadata", metadata}});
    }
  }
  r->sources_json = sources.dump(
      -1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  return r->sources_json.c_str();
}

const char* dc_reader_analyze(dc_reader* r, const char* extra_findings_json,
                              const char* only_rules, int32_t format,
                              uint32_t top) {
  if (!r->tree) return nullptr;
  try {
    analyzer::Analysis analysis =
        analyzer::Analyze(*r->tree, {}, SplitCommas(only_rules));
    if (extra_findings_json != nullptr && *extra_findings_json != '\0') {
      analyzer::ProfileView view(*r->tree);
      auto extra = analyzer::FindingsFromJson(extra_findings_json,
                                              view.BasisNs(), view.BasisName());
      if (!extra.ok()) {
        r->error = extra.status().message();
        return nullptr;
      }
      for (analyzer::Finding& f : extra.value()) {
        if (f.context.node >= r->tree->size()) {
          r->error = "finding of rule " + f.rule_id + ": node " +
                     std::to_string(f.context.node) + " is not in the profile";
          return nullptr;
        }
        if (f.context.path.empty()) {
          f.context = view.ContextOf(f.context.node);
        }
      }
      analyzer::MergeFindings(analysis, std::move(extra.value()));
    }
    if (format == 1) {
      if (top > 0 && analysis.findings.size() > top)
        analysis.findings.resize(top);
      r->analysis_output = analyzer::AnalysisToJson(analysis);
    } else {
      r->analysis_output = analyzer::RenderFindingsText(analysis, top);
    }
    r->error.clear();
    return r->analysis_output.c_str();
  } catch (const std::exception& e) {
    r->error = e.what();
    return nullptr;
  }
}

const char* dc_reader_diff(dc_reader* before, const dc_reader* after,
                           const char* metric) {
  if (!before->tree) return nullptr;
  if (!after->tree) {
    before->error = "cannot compare with an unread profile: " + after->error;
    return nullptr;
  }
  namespace diff = deepcontext::diff;
  try {
    diff::ProfileDiff result = diff::DiffProfiles(*before->tree, *after->tree);
    auto chosen = diff::ChooseRankMetric(result, *before->tree, *after->tree,
                                         metric != nullptr ? metric : "");
    if (!chosen.ok()) {
      before->error = chosen.status().message();
      return nullptr;
    }
    diff::DiffOptions options{before->paths, after->paths, chosen.value()};
    before->diff_output =
        diff::RenderDiffJson(*before->tree, *after->tree, result, options);
    before->error.clear();
    return before->diff_output.c_str();
  } catch (const std::exception& e) {
    before->error = e.what();
    return nullptr;
  }
}

}  // extern "C"

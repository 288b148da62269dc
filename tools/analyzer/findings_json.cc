#include "tools/analyzer/findings_json.h"

#include <nlohmann/json.hpp>

namespace deepcontext::analyzer {

namespace {

using Json = nlohmann::ordered_json;

Json FindingJson(const Finding& f) {
  Json evidence = Json::array();
  for (const Evidence& e : f.evidence) {
    Json item = {{"metric", e.metric}, {"value", e.value}, {"unit", e.unit}};
    if (!e.comparator.empty()) {
      item["comparator"] = e.comparator;
      item["threshold"] = e.threshold;
    }
    evidence.push_back(item);
  }
  const FindingContext& c = f.context;
  return {
      {"rule", f.rule_id},
      {"severity", SeverityName(f.severity)},
      {"title", f.title},
      {"node", {{"id", c.node}, {"path", c.path}}},
      {"context",
       {{"file", c.file},
        {"line", c.line},
        {"function", c.function},
        {"operator", c.op},
        {"phase", c.phase},
        {"kernel", c.kernel}}},
      {"evidence", evidence},
      {"benefit",
       {{"low_seconds", f.benefit.low_ns / 1e9},
        {"high_seconds", f.benefit.high_ns / 1e9},
        {"share_low", f.benefit.ShareLow()},
        {"share_high", f.benefit.ShareHigh()},
        {"basis", f.benefit.basis},
        {"basis_seconds", f.benefit.basis_ns / 1e9},
        {"method", f.benefit.method},
        {"bytes", f.benefit.bytes},
        {"peak_bytes", f.benefit.peak_bytes}}},
      {"suggestion", f.suggestion},
      {"example", f.example},
  };
}

Severity ParseSeverity(const std::string& name) {
  if (name == "high") return Severity::kHigh;
  if (name == "medium") return Severity::kMedium;
  return Severity::kLow;
}

}  // namespace

std::string AnalysisToJson(const Analysis& analysis) {
  Json findings = Json::array();
  for (const Finding& f : analysis.findings) findings.push_back(FindingJson(f));
  Json skipped = Json::array();
  for (const SkippedRule& s : analysis.skipped) {
    skipped.push_back({{"rule", s.rule_id}, {"reason", s.reason}});
  }
  Json document = {{"version", 1},
                   {"basis", analysis.basis},
                   {"basis_seconds", analysis.basis_ns / 1e9},
                   {"rules_run", analysis.rules_run},
                   {"not_checked", skipped},
                   {"findings", findings}};
  return document.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

StatusOr<std::vector<Finding>> FindingsFromJson(const std::string& text,
                                                double basis_ns,
                                                const std::string& basis) {
  Json document = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_array()) {
    return Status::Error("findings must be a JSON array");
  }
  std::vector<Finding> findings;
  try {
    for (const Json& item : document) {
      Finding f;
      f.rule_id = item.at("rule").get<std::string>();
      f.title = item.value("title", "");
      f.suggestion = item.value("suggestion", "");
      f.example = item.value("example", "");
      if (item.contains("node")) {
        f.context.node = item["node"].value("id", 0u);
        f.context.path = item["node"].value("path", std::vector<std::string>{});
      }
      if (item.contains("context")) {
        const Json& c = item["context"];
        f.context.file = c.value("file", "");
        f.context.line = c.value("line", 0u);
        f.context.function = c.value("function", "");
        f.context.op = c.value("operator", "");
        f.context.phase = c.value("phase", "");
        f.context.kernel = c.value("kernel", "");
      }
      for (const Json& e : item.value("evidence", Json::array())) {
        f.evidence.push_back({e.at("metric").get<std::string>(),
                              e.value("value", 0.0), e.value("unit", ""),
                              e.value("comparator", ""),
                              e.value("threshold", 0.0)});
      }
      if (item.contains("benefit")) {
        const Json& b = item["benefit"];
        f.benefit.low_ns = b.value("low_seconds", 0.0) * 1e9;
        f.benefit.high_ns = b.value("high_seconds", 0.0) * 1e9;
        f.benefit.basis_ns = b.value("basis_seconds", 0.0) * 1e9;
        f.benefit.basis = b.value("basis", "");
        f.benefit.method = b.value("method", "");
        f.benefit.bytes = b.value("bytes", 0.0);
        f.benefit.peak_bytes = b.value("peak_bytes", 0.0);
      }
      if (f.benefit.basis_ns <= 0) {
        f.benefit.basis_ns = basis_ns;
        f.benefit.basis = basis;
      }
      f.severity = item.contains("severity")
                       ? ParseSeverity(item["severity"].get<std::string>())
                       : SeverityForShare(f.benefit.ShareHigh());
      findings.push_back(std::move(f));
    }
  } catch (const Json::exception& e) {
    return Status::Error(std::string("bad finding: ") + e.what());
  }
  return findings;
}

}  // namespace deepcontext::analyzer

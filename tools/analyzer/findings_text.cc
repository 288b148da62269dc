#include "tools/analyzer/findings_text.h"

#include <algorithm>

#include "tools/analyzer/profile_view.h"
#include "tools/analyzer/units.h"

namespace deepcontext::analyzer {

namespace {

std::string FormatValue(double value, const std::string& unit) {
  if (unit == "ns") return FormatDuration(value);
  if (unit == "bytes") return FormatBytes(value);
  if (unit == "ratio") {
    return value <= 1 ? FormatPercent(value) : FormatRatio(value) + "x";
  }
  if (unit == "GB/s") return FormatRatio(value) + " GB/s";
  return FormatCount(value);
}

// "train.py:42 -> aten::linear [backward] -> ampere_sgemm_128x64_tn"
std::string ContextLine(const FindingContext& context) {
  std::string line = ShortLocation(context);
  if (!context.function.empty()) {
    line += (line.empty() ? "" : " ") + ("(" + context.function + ")");
  }
  if (!context.op.empty()) {
    line += (line.empty() ? "" : " -> ") + context.op;
    if (!context.phase.empty()) line += " [" + context.phase + "]";
  }
  if (!context.kernel.empty()) {
    line += (line.empty() ? "" : " -> ") + context.kernel;
  }
  if (line.empty() && !context.path.empty()) line = context.path.back();
  // The root: a finding about the whole run (no line holds the time).
  return line.empty() ? "the whole run" : line;
}

bool IsMemoryBenefit(const Benefit& benefit) {
  return benefit.peak_bytes > 0 && benefit.high_ns <= 0;
}

std::string BenefitText(const Benefit& benefit) {
  if (IsMemoryBenefit(benefit)) {
    return "up to " + FormatBytes(benefit.bytes) + " of the " +
           FormatBytes(benefit.peak_bytes) + " device memory peak (" +
           FormatPercent(benefit.BytesShare()) + ")";
  }
  std::string text;
  if (benefit.high_ns - benefit.low_ns <= 0.05 * benefit.high_ns) {
    text = FormatDuration(benefit.high_ns);
  } else {
    text = FormatDuration(benefit.low_ns) + " - " +
           FormatDuration(benefit.high_ns);
  }
  if (benefit.basis_ns > 0) {
    std::string low = FormatPercent(benefit.ShareLow());
    std::string high = FormatPercent(benefit.ShareHigh());
    text += " (" + (low == high ? high : low + " - " + high) + " of " +
            benefit.basis + ")";
  }
  return text;
}

std::string EvidenceText(const Evidence& evidence) {
  std::string text =
      evidence.metric + " = " + FormatValue(evidence.value, evidence.unit);
  if (!evidence.comparator.empty()) {
    text += " (threshold " + evidence.comparator + " " +
            FormatValue(evidence.threshold, evidence.unit) + ")";
  }
  return text;
}

std::string SummaryBenefit(const Benefit& benefit) {
  if (IsMemoryBenefit(benefit)) {
    return "holds " + FormatBytes(benefit.bytes) + " (" +
           FormatPercent(benefit.BytesShare()) + " of the memory peak)";
  }
  return "saves up to " + FormatDuration(benefit.high_ns) + " (" +
         FormatPercent(benefit.ShareHigh()) + ")";
}

}  // namespace

std::string RenderFindingsText(const Analysis& analysis, size_t top) {
  std::string out;
  size_t shown = top == 0 ? analysis.findings.size()
                          : std::min(top, analysis.findings.size());
  if (analysis.findings.empty()) {
    out += "No findings: no rule found a problem worth " +
           std::string("at least 1% of the ") + analysis.basis + ".\n";
  } else {
    out += std::to_string(analysis.findings.size()) + " finding" +
           (analysis.findings.size() == 1 ? "" : "s") +
           ", ranked by estimated benefit";
    if (shown < analysis.findings.size()) {
      out += " (top " + std::to_string(shown) + " shown)";
    }
    out += ":\n";
  }
  for (size_t i = 0; i < shown; ++i) {
    const Finding& f = analysis.findings[i];
    out += "\n" + std::to_string(i + 1) + ". [" + SeverityName(f.severity) +
           "] " + f.rule_id + ": " + f.title + "\n";
    out += "   at:         " + ContextLine(f.context) + "\n";
    for (size_t e = 0; e < f.evidence.size(); ++e) {
      out += std::string(e == 0 ? "   evidence:   " : "               ") +
             EvidenceText(f.evidence[e]) + "\n";
    }
    out += "   benefit:    " + BenefitText(f.benefit) + "\n";
    out += "   suggestion: " + f.suggestion + "\n";
    if (!f.example.empty()) out += "   example:    " + f.example + "\n";
  }
  if (!analysis.skipped.empty()) {
    out += "\nNot checked:\n";
    for (const SkippedRule& skipped : analysis.skipped) {
      out += "  " + skipped.rule_id + ": " + skipped.reason + "\n";
    }
  }
  return out;
}

std::string RenderFindingsSummary(const Analysis& analysis, size_t top) {
  if (analysis.findings.empty() || top == 0) return "";
  std::string out = "Findings:  (deepcontext analyze for details)\n";
  size_t shown = std::min(top, analysis.findings.size());
  for (size_t i = 0; i < shown; ++i) {
    const Finding& f = analysis.findings[i];
    out += "  " + std::to_string(i + 1) + ". [" + SeverityName(f.severity) +
           "] " + f.rule_id + " at " + ContextLine(f.context) + ": " +
           SummaryBenefit(f.benefit) + "\n";
  }
  if (shown < analysis.findings.size()) {
    out +=
        "  ... " + std::to_string(analysis.findings.size() - shown) + " more\n";
  }
  return out;
}

std::string SummarizeFindings(const analysis::ProfileTree& tree, size_t top) {
  return RenderFindingsSummary(Analyze(tree), top);
}

}  // namespace deepcontext::analyzer

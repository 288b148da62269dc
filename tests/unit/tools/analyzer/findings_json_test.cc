#include "tools/analyzer/findings_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/unit/tools/analyzer/gpu_profiles.h"
#include "tools/analyzer/findings_text.h"

namespace deepcontext::analyzer {
namespace {

Analysis SyncAnalysis() {
  testing::GpuProfileSpec spec;
  spec.sync_ns = 50e6;
  static const analysis::ProfileTree tree =
      analysis::ProfileTree::FromProfile(testing::MakeGpuProfile(spec));
  return Analyze(tree);
}

TEST(FindingsJson, HasTheDocumentedShapeAndRoundTrips) {
  Analysis analysis = SyncAnalysis();
  nlohmann::json document = nlohmann::json::parse(AnalysisToJson(analysis));
  EXPECT_EQ(document["version"], 1);
  ASSERT_EQ(document["findings"].size(), 1u);
  const auto& f = document["findings"][0];
  EXPECT_EQ(f["rule"], "host_device_sync");
  EXPECT_EQ(f["context"]["file"], "/home/user/train.py");
  EXPECT_EQ(f["context"]["line"], 50);
  EXPECT_EQ(f["node"]["id"], analysis.findings[0].context.node);
  EXPECT_EQ(f["node"]["path"].back(), "sync: stream");
  EXPECT_DOUBLE_EQ(f["benefit"]["high_seconds"].get<double>(), 0.05);
  EXPECT_EQ(f["evidence"][0]["comparator"], ">=");

  auto parsed = FindingsFromJson(document["findings"].dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ASSERT_EQ(parsed.value().size(), 1u);
  EXPECT_EQ(parsed.value()[0].rule_id, "host_device_sync");
  EXPECT_EQ(parsed.value()[0].context.node, analysis.findings[0].context.node);
  EXPECT_DOUBLE_EQ(parsed.value()[0].benefit.high_ns, 50e6);
  EXPECT_EQ(parsed.value()[0].severity, analysis.findings[0].severity);
}

TEST(FindingsJson, MemoryBenefitRoundTripsAndReadsAsBytes) {
  Finding f;
  f.rule_id = "memory_peak";
  f.benefit.bytes = 3 * 1024.0 * 1024 * 1024;
  f.benefit.peak_bytes = 12 * 1024.0 * 1024 * 1024;
  Analysis analysis;
  analysis.findings.push_back(f);
  nlohmann::json document = nlohmann::json::parse(AnalysisToJson(analysis));
  auto parsed = FindingsFromJson(document["findings"].dump());
  ASSERT_TRUE(parsed.ok());
  EXPECT_DOUBLE_EQ(parsed.value()[0].benefit.peak_bytes, f.benefit.peak_bytes);
  EXPECT_NE(
      RenderFindingsText(analysis).find("benefit:    up to 3.00 GiB of the "
                                        "12.0 GiB device memory peak (25.0%)"),
      std::string::npos)
      << RenderFindingsText(analysis);
}

TEST(FindingsJson, RejectsMalformedInputWithAMessage) {
  EXPECT_FALSE(FindingsFromJson("{").ok());
  EXPECT_FALSE(FindingsFromJson("{}").ok());
  auto missing_rule = FindingsFromJson(R"([{"title": "x"}])");
  ASSERT_FALSE(missing_rule.ok());
  EXPECT_NE(missing_rule.status().message().find("bad finding"), std::string::npos);
}

TEST(FindingsJson, UserFindingWithoutSeverityGetsOneFromItsShare) {
  auto parsed = FindingsFromJson(
      R"([{"rule": "user.x", "node": {"id": 3}, "benefit": {"high_seconds": 0.2}}])",
      1e9, "profiled wall time");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed.value()[0].severity, Severity::kHigh);
  EXPECT_EQ(parsed.value()[0].benefit.basis, "profiled wall time");
}

TEST(FindingsText, ShowsContextEvidenceBenefitAndSuggestion) {
  std::string text = RenderFindingsText(SyncAnalysis());
  EXPECT_NE(text.find("1. [medium] host_device_sync: host waited 50.0 ms"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          "at:         train.py:50 (train) -> aten::item -> sync: stream"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("evidence:   wait_time = 50.0 ms (threshold >= 10.0 ms)"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          "benefit:    1.00 ms - 50.0 ms (0.1% - 5.0% of profiled wall time)"),
      std::string::npos)
      << text;
  std::string summary = RenderFindingsSummary(SyncAnalysis(), 3);
  EXPECT_EQ(summary.rfind("Findings:", 0), 0u);
}

}  // namespace
}  // namespace deepcontext::analyzer

#include "tools/export/html_export.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/unit/tools/analysis/test_profiles.h"
#include "tools/analyzer/analyzer.h"
#include "tools/analyzer/findings_json.h"
#include "tools/export/app_page.h"

namespace deepcontext::exporter {
namespace {

using analysis::ProfileTree;
using nlohmann::json;

size_t Count(const std::string &text, const std::string &part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos;
       at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

// The text of the element opened by start, up to the next "</script>".
std::string ScriptText(const std::string &page, const std::string &start) {
  size_t begin = page.find(start);
  EXPECT_NE(begin, std::string::npos) << start;
  begin += start.size();
  return page.substr(begin, page.find("</script>", begin) - begin);
}

TEST(HtmlExportTest, OneOfflinePageWithTheDataInline) {
  analysis::testing::ProfileBuilder b;
  format::NodeId thread = b.Add(0, format::FrameKind::kThread, "main");
  format::NodeId op = b.Add(thread, format::FrameKind::kOperator,
                            "</script><script>alert(1)</script>");
  b.Value(op, "cpu_time", 5);
  ProfileTree tree = ProfileTree::FromProfile(b.profile(), "x.dctx");
  std::string page = RenderHtml(tree);
  EXPECT_EQ(page.rfind("<!doctype html>", 0), 0u);
  // Offline: a meta policy that forbids every network request.
  EXPECT_NE(page.find("http-equiv=\"Content-Security-Policy\" "
                      "content=\"default-src 'none';"),
            std::string::npos);
  EXPECT_EQ(Count(page, "http://"), Count(page, "http://www.w3.org"));
  // The hostile name cannot close the data element: three scripts, three
  // closing tags (config, data, app).
  EXPECT_EQ(Count(page, "</script>"), 3u);
  EXPECT_EQ(Count(page, "alert(1)"), 1u);
  json data = json::parse(ScriptText(page, "id=\"dc-data\">"));
  ASSERT_EQ(data["profiles"].size(), 1u);
  EXPECT_EQ(data["profiles"][0]["label"], "x.dctx");
  EXPECT_EQ(data["profiles"][0]["state"], "ready");
  const json &view = data["profiles"][0]["data"];
  EXPECT_EQ(view["format"], "deepcontext-view");
  EXPECT_EQ(view["strings"][view["frames"]["name"][2].get<size_t>()],
            "</script><script>alert(1)</script>");
  EXPECT_EQ(json::parse(ScriptText(page, "id=\"dc-config\">"))["mode"],
            "embedded");
}

// The file shows the findings list and badges offline: it carries what
// `deepcontext analyze --format json` prints for the same tree.
TEST(HtmlExportTest, CarriesTheAnalyzersFindings) {
  format::Profile profile = analysis::testing::MakeTrainingProfileOf("1", "0");
  ProfileTree tree = ProfileTree::FromProfile(profile, "x.dctx");
  json data = json::parse(ScriptText(RenderHtml(tree), "id=\"dc-data\">"));
  const json &findings = data["profiles"][0]["findings"];
  EXPECT_EQ(findings,
            json::parse(analyzer::AnalysisToJson(analyzer::Analyze(tree))));
  EXPECT_FALSE(findings["rules_run"].empty());
}

TEST(HtmlExportTest, ServedPageUsesTheNonce) {
  AppPageContent content;
  content.config_json = "{\"mode\":\"server\"}";
  content.nonce = "abc123";
  std::string page = RenderAppPage(content);
  EXPECT_EQ(page.find("http-equiv"), std::string::npos);
  EXPECT_NE(page.find("<script nonce=\"abc123\">"), std::string::npos);
  EXPECT_NE(page.find("<style nonce=\"abc123\">"), std::string::npos);
  EXPECT_EQ(page.find("id=\"dc-data\""), std::string::npos);
  EXPECT_NE(ServedPagePolicy("abc123").find("script-src 'nonce-abc123'"),
            std::string::npos);
}

} // namespace
} // namespace deepcontext::exporter

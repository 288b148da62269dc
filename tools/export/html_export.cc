#include "tools/export/html_export.h"

#include <nlohmann/json.hpp>

#include "tools/analyzer/analyzer.h"
#include "tools/analyzer/findings_json.h"
#include "tools/export/app_page.h"
#include "tools/export/view_data.h"

namespace deepcontext::exporter {

std::string RenderHtml(const analysis::ProfileTree &tree) {
  // The same list shape the server's /api/profiles returns, with each
  // profile's data and findings inline instead of behind
  // /api/profiles/<id>/tree and /findings.
  std::string label =
      tree.sources().empty() ? "profile" : tree.sources()[0].path;
  if (tree.sources().size() > 1)
    label = "all profiles";
  nlohmann::json entry = {{"id", 0}, {"label", label}, {"state", "ready"}};
  std::string head =
      entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  head.pop_back(); // reopen the object to append "data"
  AppPageContent content;
  content.config_json = "{\"mode\":\"embedded\"}";
  content.data_json =
      "{\"profiles\":[" + head + ",\"data\":" + RenderViewData(tree) +
      ",\"findings\":" + analyzer::AnalysisToJson(analyzer::Analyze(tree)) +
      "}]}";
  return RenderAppPage(content);
}

} // namespace deepcontext::exporter

// The viewer's one HTML page: the built front end (web/) inlined with its
// configuration and, for exports, the profile data. `deepcontext view`
// serves it and `export --format html` writes it, so both run the same app.
#pragma once

#include <string>

namespace deepcontext::exporter {

struct AppPageContent {
  // JSON object the front end reads first, e.g. {"mode":"server"}.
  std::string config_json;
  // JSON the front end reads instead of asking a server (the export's
  // profiles); empty for the served page.
  std::string data_json;
  // When not empty, the inline script and style carry this nonce and the
  // Content-Security-Policy comes from the server's header. When empty (a
  // file opened from disk) a <meta> policy allows only the page's own
  // inline code and forbids every network request.
  std::string nonce;
};

// Returns the whole page. JSON is embedded with every '<' escaped, so no
// name inside a profile can close the script element.
std::string RenderAppPage(const AppPageContent& content);

// The Content-Security-Policy header for a page rendered with nonce.
std::string ServedPagePolicy(const std::string& nonce);

}  // namespace deepcontext::exporter

// `deepcontext view`: serve profiles to the browser viewer on 127.0.0.1.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace deepcontext::cli {

struct ViewRequest {
  std::vector<std::string> files;
  int port = 0;             // 0: any free port
  bool open_browser = true; // only when a display is available
};

inline constexpr int kViewOk = 0;
inline constexpr int kViewCannotServe = 1;  // e.g. the port is taken

// Serves request.files until SIGINT or SIGTERM, then returns kViewOk.
// The URL goes to out first (one line, then flushed, so scripts can read
// it); profiles that cannot be read are reported on err, and the server
// keeps serving the others and shows the error in the page.
int RunView(const ViewRequest& request, std::ostream& out, std::ostream& err);

// Registers `view FILES... [--port N] [--no-browser]` on app.
void AddViewCommand(CLI::App& app, std::function<int()>& action);

}  // namespace deepcontext::cli

// The "html" export format: the viewer and the profile in one file that
// opens from disk with no server and no network.
#pragma once

#include <string>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::exporter {

// Returns one self-contained HTML page: the front end of `deepcontext view`
// with tree embedded as view data (view_data.h) and the analyzer's findings
// for it (what `deepcontext analyze --format json` prints), so the file
// shows the same findings list and badges as the server. The source view
// has no file text in an export and says so. May throw std::bad_alloc.
std::string RenderHtml(const analysis::ProfileTree& tree);

}  // namespace deepcontext::exporter

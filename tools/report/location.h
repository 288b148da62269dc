// Short source locations for report columns.
#pragma once

#include <string>
#include <string_view>

#include "tools/analysis/frame.h"

namespace deepcontext::report {

// Shortens a source path for display. Files under site-packages or
// dist-packages are shown from the package name
// (".../site-packages/torch/nn/modules/conv.py" -> "torch/nn/modules/conv.py"),
// other paths keep their last two components
// ("/home/u/proj/src/model.py" -> "src/model.py").
std::string ShortenPath(std::string_view path);

// Returns "file:line" with the file shortened (whole with full_path), just
// the file when the line is unknown, and "" when the file is unknown.
std::string FormatLocation(const analysis::Frame& frame,
                           bool full_path = false);

}  // namespace deepcontext::report

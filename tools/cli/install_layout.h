// Where the parts of an installation (or build tree) are, relative to the
// running `deepcontext` executable: bin/, lib/, python/, share/deepcontext/.
#pragma once

#include <string>

#include "common/status.h"

namespace deepcontext::cli {

struct InstallLayout {
  std::string prefix;
  std::string runtime_library;  // lib/libdeepcontext.so
  std::string python_dir;       // directory holding the deepcontext package
  std::string bootstrap_dir;    // holds the sitecustomize that starts profiling
};

// Locates the layout from /proc/self/exe (DEEPCONTEXT_HOME overrides): a
// build tree, an installed prefix, or a pip install (whose prefix is
// <site-packages>/deepcontext/_home). The error names the part that is
// missing, since a run cannot start without it.
StatusOr<InstallLayout> FindInstallLayout();

}  // namespace deepcontext::cli

// Where the parts of an installation (or build tree) are, relative to the
// running `deepcontext` executable: bin/, lib/, python/, share/deepcontext/.
#pragma once

#include <string>

namespace deepcontext::cli {

struct InstallLayout {
  std::string prefix;
  std::string runtime_library;  // lib/libdeepcontext.so
  std::string python_dir;       // directory holding the deepcontext package
  std::string bootstrap_dir;    // holds the sitecustomize that starts profiling
};

// Locates the layout from /proc/self/exe (DEEPCONTEXT_HOME overrides).
// Returns false with a message when a part is missing.
bool FindInstallLayout(InstallLayout* layout, std::string* error);

}  // namespace deepcontext::cli

#include "tools/cli/install_layout.h"

#include <cstdlib>
#include <filesystem>

namespace deepcontext::cli {

StatusOr<InstallLayout> FindInstallLayout() {
  namespace fs = std::filesystem;
  InstallLayout found;
  InstallLayout* layout = &found;
  std::error_code ec;
  fs::path prefix;
  if (const char* home = std::getenv("DEEPCONTEXT_HOME"); home && *home) {
    prefix = home;
  } else {
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) {
      return Status::Error("cannot locate the deepcontext executable: " + ec.message());
    }
    prefix = exe.parent_path().parent_path();
  }
  layout->prefix = prefix.string();
  layout->runtime_library = (prefix / "lib" / "libdeepcontext.so").string();
  layout->python_dir = (prefix / "python").string();
  layout->bootstrap_dir =
      (prefix / "python" / "deepcontext" / "_bootstrap").string();
  // Installed by pip, the prefix is <site-packages>/deepcontext/_home and
  // the package is the folder above it.
  const fs::path package = prefix.parent_path();
  if (!fs::exists(fs::path(layout->bootstrap_dir) / "sitecustomize.py", ec) &&
      prefix.filename() == "_home" &&
      fs::exists(package / "_bootstrap" / "sitecustomize.py", ec)) {
    layout->python_dir = package.parent_path().string();
    layout->bootstrap_dir = (package / "_bootstrap").string();
  }
  if (!fs::exists(layout->runtime_library, ec)) {
    return Status::Error("runtime library missing: " + layout->runtime_library);
  }
  if (!fs::exists(fs::path(layout->bootstrap_dir) / "sitecustomize.py", ec)) {
    return Status::Error("Python package missing under " + layout->python_dir);
  }
  return found;
}

}  // namespace deepcontext::cli

#include "tools/cli/export_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <exception>
#include <iostream>
#include <memory>
#include <utility>

#include "tools/analysis/profile_tree.h"
#include "common/status.h"
#include "tools/cli/profile_inputs.h"
#include "tools/export/export_formats.h"

namespace deepcontext::cli {

namespace {

constexpr const char* kPrefix = "deepcontext export: ";
constexpr const char* kStdout = "-";

// Writes text to path through a temporary file in the same directory,
// renamed over path once complete: a failed write leaves path as it was and
// removes only the temporary this call created. Targets that are not
// regular files (/dev/full, a FIFO, a directory) are refused, never
// replaced. The text is fully rendered before anything is created.
Status WriteOutput(const std::string& path, const std::string& text) {
  struct stat info {};
  if (stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    return Status::Error("cannot write " + path +
                         ": not a regular file (use -o - for standard "
                         "output)");
  }
  std::string directory = ".";
  if (const size_t slash = path.rfind('/'); slash != std::string::npos) {
    directory = slash == 0 ? "/" : path.substr(0, slash);
  }
  std::string temporary = directory + "/.deepcontext-export-XXXXXX";
  const int fd = mkstemp(temporary.data());
  if (fd < 0) {
    return Status::Error("cannot write " + path + ": " + std::strerror(errno));
  }
  // mkstemp creates 0600; a new export gets the usual permissions.
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  std::string_view rest(text);
  int error = 0;
  while (!rest.empty()) {
    const ssize_t n = write(fd, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : EIO;
      break;
    }
    rest.remove_prefix(static_cast<size_t>(n));
  }
  if (error == 0 && fsync(fd) != 0 && errno != EINVAL) error = errno;
  if (close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && rename(temporary.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    unlink(temporary.c_str());
    return Status::Error("cannot write " + path + ": " + std::strerror(error));
  }
  return Status::Ok();
}

int RunExportOrThrow(const ExportRequest& request, std::ostream& out,
                     std::ostream& err) {
  // Checked before reading anything: a typo should not cost a slow read.
  const exporter::ExportFormat* chosen =
      exporter::FindExportFormat(request.format);
  if (chosen == nullptr) {
    err << kPrefix << "unknown format '" << request.format
        << "' (available: " << exporter::ExportFormatNames() << ")\n";
    return kExportUsage;
  }

  std::optional<analysis::ProfileTree> tree =
      ReadProfileTree(request.files, kPrefix, err);
  if (!tree) return kExportBadFile;
  if (chosen->unavailable != nullptr || chosen->render == nullptr) {
    std::string why = chosen->unavailable ? chosen->unavailable(*tree) : "";
    if (!why.empty() || chosen->render == nullptr) {
      err << kPrefix << "cannot write --format " << chosen->name << ": " << why
          << "\n";
      return kExportBadFile;
    }
  }
  std::string text = chosen->render(*tree);

  if (request.output == kStdout) {
    out << text;
    out.flush();
    if (!out) {
      err << kPrefix << "cannot write to standard output\n";
      return kExportBadFile;
    }
    return kExportOk;
  }
  if (Status status = WriteOutput(request.output, text); !status.ok()) {
    err << kPrefix << status.message() << "\n";
    return kExportBadFile;
  }
  return kExportOk;
}

}  // namespace

int RunExport(const ExportRequest& request, std::ostream& out,
              std::ostream& err) {
  // The only exceptions left are resource failures (std::bad_alloc on a
  // huge profile); they get a message and a status, not an abort.
  try {
    return RunExportOrThrow(request, out, err);
  } catch (const std::exception& e) {
    err << kPrefix << e.what() << "\n";
    return kExportBadFile;
  }
}

void AddExportCommand(CLI::App& app, std::function<int()>& action) {
  auto request = std::make_shared<ExportRequest>();
  CLI::App* command = app.add_subcommand(
      "export", "Write profiles in another format (one tree for all files)");
  command->add_option("files", request->files, ".dctx profile files")
      ->required();
  // Not a CLI::IsMember check: RunExport names the available formats in
  // its own message, which stays right as formats are added.
  command
      ->add_option(
          "--format", request->format,
          "Output format (available: " + exporter::ExportFormatNames() + ")")
      ->required();
  command
      ->add_option("-o,--output", request->output,
                   "Output file, - for standard output")
      ->capture_default_str();
  command->callback([request, &action] {
    action = [request] { return RunExport(*request, std::cout, std::cerr); };
  });
}

}  // namespace deepcontext::cli

#include "tools/cli/export_command.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>
#include <utility>

#include "tools/analysis/profile_tree.h"
#include "tools/cli/profile_inputs.h"
#include "tools/export/export_formats.h"

namespace deepcontext::cli {

namespace {

constexpr const char* kPrefix = "deepcontext export: ";
constexpr const char* kStdout = "-";

// Writes text to path and returns "" or a one-line error. The text is fully
// rendered before the file is opened, so a failure while exporting never
// leaves a truncated file behind.
std::string WriteOutput(const std::string& path, const std::string& text) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return "cannot write " + path + ": " + std::strerror(errno);
  }
  bool ok = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  int write_errno = errno;
  // fclose flushes, so a full disk may only show up here.
  if (std::fclose(file) != 0 && ok) {
    ok = false;
    write_errno = errno;
  }
  if (!ok) {
    std::remove(path.c_str());
    return "cannot write " + path + ": " + std::strerror(write_errno);
  }
  return "";
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
  if (std::string error = WriteOutput(request.output, text); !error.empty()) {
    err << kPrefix << error << "\n";
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

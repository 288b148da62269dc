// `deepcontext export`: write one or several profiles in a format other tools
// read (formats: tools/export/export_formats.h).
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace deepcontext::cli {

// Everything `deepcontext export` was asked to do.
struct ExportRequest {
  std::vector<std::string> files;
  std::string format;        // a name from exporter::ExportFormats()
  std::string output = "-";  // file path, or "-" for standard output
};

// Exit status of the export command.
inline constexpr int kExportOk = 0;
inline constexpr int kExportBadFile = 1;  // an input could not be read or
                                          // the output could not be written
inline constexpr int kExportUsage = 2;    // --format names no format

// Reads every file of request, merges them into one tree as the report
// does, and writes it in request.format to request.output (to out when it
// is "-"). Problems go to err, one line each; returns one of the kExport*
// statuses. Nothing is written unless every input was read.
int RunExport(const ExportRequest& request, std::ostream& out,
              std::ostream& err);

// Registers the `export` subcommand on app:
//   export FILES... --format json [-o OUT]
// When the subcommand is parsed it sets action to run the export with
// stdout and stderr.
void AddExportCommand(CLI::App& app, std::function<int()>& action);

}  // namespace deepcontext::cli

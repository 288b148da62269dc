// `deepcontext report`: print one or several profiles as a text report.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "tools/report/report.h"

namespace deepcontext::cli {

// Everything `deepcontext report` was asked to do.
struct ReportRequest {
  std::vector<std::string> files;
  report::ReportOptions options;
};

// Exit status of the report command.
inline constexpr int kReportOk = 0;
inline constexpr int kReportBadFile = 1;        // a file could not be read
inline constexpr int kReportUnknownMetric = 2;  // --metric names no metric

// Reads every file of request, prints the report to out and problems to err
// (one line each), and returns one of the kReport* statuses. Unreadable
// files are all reported before giving up, so one run names every bad file.
int RunReport(const ReportRequest& request, std::ostream& out,
              std::ostream& err);

// Registers the `report` subcommand on app:
//   report FILES... [--view top-down|bottom-up|flat] [--metric NAME]
//          [--depth N] [--min-percent P] [--top N] [--width N | --wide]
//          [--full-paths] [--all-frames] [--ascii]
// When the subcommand is parsed it sets action to run the report on stdout
// and stderr.
void AddReportCommand(CLI::App& app, std::function<int()>& action);

}  // namespace deepcontext::cli

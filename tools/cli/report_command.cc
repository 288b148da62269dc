#include "tools/cli/report_command.h"

#include <unistd.h>

#include <cmath>
#include <exception>
#include <iostream>
#include <memory>
#include <utility>

#include "tools/analysis/metric_selection.h"
#include "tools/analysis/profile_tree.h"
#include "tools/cli/profile_inputs.h"
#include "tools/cli/rank_imbalance.h"
#include "tools/cli/terminal_width.h"

namespace deepcontext::cli {

namespace {

constexpr const char* kPrefix = "deepcontext report: ";

// CLI::Range compares with < and >, which NaN passes: "nan" would hide
// nothing and print a "nan%" note.
CLI::Validator NotANumberRejected() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        if (CLI::detail::lexical_cast(text, value) && std::isnan(value)) {
          return "not a number: " + text;
        }
        return "";
      },
      "", "not NaN");
}

int RunReportOrThrow(const ReportRequest& request, std::ostream& out,
                     std::ostream& err) {
  std::optional<analysis::ProfileTree> read =
      ReadProfileTree(request.files, kPrefix, err);
  if (!read) return kReportBadFile;
  const analysis::ProfileTree& tree = *read;
  if (!request.options.metric.empty()) {
    StatusOr<analysis::MetricIndex> lookup =
        analysis::ResolveMetric(tree, request.options.metric);
    if (!lookup.ok()) {
      err << kPrefix << lookup.status().message() << "\n";
      return kReportUnknownMetric;
    }
  }
  out << report::RenderReport(tree, request.options);
  out << RankImbalanceOfFiles(request.files, request.options);
  // Write errors (a full disk, a closed pipe) are reported by main, for
  // every command alike.
  return kReportOk;
}

}  // namespace

int RunReport(const ReportRequest& request, std::ostream& out,
              std::ostream& err) {
  // The only exceptions left are resource failures (std::bad_alloc on a
  // huge profile); they get a message and a status, not an abort.
  try {
    return RunReportOrThrow(request, out, err);
  } catch (const std::exception& e) {
    err << kPrefix << e.what() << "\n";
    return kReportBadFile;
  }
}

void AddReportCommand(CLI::App& app, std::function<int()>& action) {
  auto request = std::make_shared<ReportRequest>();
  auto view = std::make_shared<std::string>("top-down");
  auto ascii = std::make_shared<bool>(false);
  CLI::App* command = app.add_subcommand(
      "report", "Print profiles as a text report (one tree for all files)");
  command->add_option("files", request->files, ".dctx profile files")
      ->required();
  command
      ->add_option("--view", *view,
                   "View: top-down (callees under callers), bottom-up or flat")
      ->check(CLI::IsMember({"top-down", "bottom-up", "flat"}))
      ->capture_default_str();
  command->add_option(
      "--metric", request->options.metric,
      "Metric to show (default: gpu_time when the profile has GPU time, else "
      "wall_time when op CPU time was sampled, else cpu_time); a metric "
      "without values falls back to the first one with values, with a note");
  command
      ->add_option("--depth", request->options.depth,
                   "Deepest tree level shown, 0 = unlimited")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command
      ->add_option("--min-percent", request->options.min_percent,
                   "Hide nodes below this percentage of the total")
      ->check(NotANumberRejected() & CLI::Range(0.0, 100.0))
      ->capture_default_str();
  command
      ->add_option("--top", request->options.top,
                   "Number of hotspots listed, 0 = none")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  CLI::Option* width =
      command
          ->add_option("--width", request->options.width,
                       "Shorten long names (in the middle) so lines fit this "
                       "width, 0 = unlimited (default: $COLUMNS, else the "
                       "terminal's width, else " +
                           std::to_string(kDefaultReportWidth) + ")")
          ->check(CLI::NonNegativeNumber);
  auto wide = std::make_shared<bool>(false);
  command->add_flag("--wide", *wide, "Show names whole (same as --width 0)")
      ->excludes(width);
  command->add_flag("--full-paths", request->options.full_paths,
                    "Show whole file paths in the Location column");
  command->add_flag("--all-frames", request->options.all_frames,
                    "Show every frame: torch's Module._call_impl wrappers, "
                    "torch.compile's machinery (Dynamo, AOTAutograd, Inductor, "
                    "Triton launchers) and the profiler's own native frames "
                    "are folded otherwise");
  command->add_flag("--ascii", *ascii, "Draw tree guides with ASCII only");
  command->callback([request, view, ascii, wide, width, &action] {
    if (*wide) {
      request->options.width = 0;
    } else if (width->count() == 0) {
      request->options.width = TerminalWidth(STDOUT_FILENO);
    }
    // IsMember already rejected anything ParseView does not know.
    request->options.view =
        report::ParseView(*view).value_or(report::View::kTopDown);
    request->options.unicode = !*ascii;
    action = [request] { return RunReport(*request, std::cout, std::cerr); };
  });
}

}  // namespace deepcontext::cli

// The `deepcontext` command: one subcommand per file of this folder.
#include <functional>

#include <CLI/CLI.hpp>

#include "tools/cli/diff_command.h"
#include "tools/cli/analyze_command.h"
#include "tools/cli/export_command.h"
#include "tools/cli/merge_command.h"
#include "tools/cli/report_command.h"
#include "tools/cli/run_command.h"
#include "tools/cli/view_command.h"

int main(int argc, char** argv) {
  CLI::App app{"DeepContext: calling-context profiler for deep-learning programs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(DEEPCONTEXT_VERSION));
  std::function<int()> action = [] { return 0; };
  deepcontext::cli::AddRunCommand(app, action);
  deepcontext::cli::AddReportCommand(app, action);
  deepcontext::cli::AddExportCommand(app, action);
  deepcontext::cli::AddViewCommand(app, action);
  deepcontext::cli::AddMergeCommand(app, action);
  deepcontext::cli::AddDiffCommand(app, action);
  deepcontext::cli::AddAnalyzeCommand(app, action);
  CLI11_PARSE(app, argc, argv);
  return action();
}

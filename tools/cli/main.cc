// The `deepcontext` command: one subcommand per file of this folder.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/cli/diff_command.h"
#include "tools/cli/analyze_command.h"
#include "tools/cli/export_command.h"
#include "tools/cli/merge_command.h"
#include "tools/cli/report_command.h"
#include "tools/cli/run_command.h"
#include "tools/cli/view_command.h"

namespace {

// Exit status of a command line that could not be parsed, as for most
// Unix tools (and distinct from 1, a command that ran and failed).
constexpr int kUsageError = 2;

// "run, report, export": the subcommands, in the order they were added.
std::string CommandNames(CLI::App& app) {
  std::string names;
  for (const CLI::App* command : app.get_subcommands({})) {
    names += (names.empty() ? "" : ", ") + command->get_name();
  }
  return names;
}

// Prints a usage error in two lines, what was wrong and where help is, and
// returns kUsageError. An unknown first word gets the list of commands.
int UsageError(CLI::App& app, const CLI::ParseError& error, int argc,
               char** argv) {
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const CLI::App* command : app.get_subcommands({})) {
      known = known || command->check_name(argv[1]);
    }
    if (!known) {
      std::cerr << "deepcontext: unknown command '" << argv[1]
                << "'; the commands are: " << CommandNames(app) << "\n"
                << "Run 'deepcontext --help' for usage.\n";
      return kUsageError;
    }
  }
  std::string where = "deepcontext";
  std::vector<CLI::App*> parsed = app.get_subcommands();
  if (!parsed.empty()) where += " " + parsed.front()->get_name();
  std::cerr << where << ": " << error.what() << "\n"
            << "Run '" << where << " --help' for usage.\n";
  return kUsageError;
}

// Flushes what the command printed. Output lost to a full disk or a closed
// pipe must not look like success: a script reading the report would
// carry on with half of it.
int FinishStdout(int status) {
  errno = 0;
  std::cout.flush();
  const bool failed =
      !std::cout.good() || std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (!failed) return status;
  const int error = errno;
  std::cerr << "deepcontext: cannot write to standard output"
            << (error != 0 ? std::string(": ") + std::strerror(error) : "")
            << "\n";
  return status != 0 ? status : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Named here, not after argv[0]: help reads "deepcontext" also when run
  // through `python3 -m deepcontext` or a build path.
  CLI::App app{
      "DeepContext: calling-context profiler for deep-learning programs",
      "deepcontext"};
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return FinishStdout(app.exit(e));
  } catch (const CLI::ParseError& e) {
    return UsageError(app, e, argc, argv);
  } catch (const CLI::Error& e) {  // a subcommand's callback gave up
    return FinishStdout(app.exit(e));
  }
  return FinishStdout(action());
}

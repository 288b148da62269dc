#include "tools/cli/analyze_command.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>

#include "tools/analyzer/analyzer.h"
#include "tools/analyzer/findings_json.h"
#include "tools/analyzer/findings_text.h"
#include "tools/analyzer/rule.h"
#include "tools/cli/install_layout.h"
#include "tools/cli/profile_inputs.h"

namespace deepcontext::cli {

namespace {

constexpr const char* kPrefix = "deepcontext analyze: ";

bool KnownRule(const std::string& id) {
  for (const analyzer::Rule& rule : analyzer::BuiltinRules()) {
    if (id == rule.id) return true;
  }
  return false;
}

// User rules are Python: run `python3 -m deepcontext._analyze ...` with the
// package of this installation first on the path. Returns only on failure.
int ExecPythonAnalyzer(const AnalyzeRequest& request, std::ostream& err) {
  const StatusOr<InstallLayout> found = FindInstallLayout();
  if (!found.ok()) {
    err << kPrefix << found.status().message() << "\n";
    return kAnalyzeBadArguments;
  }
  const InstallLayout& layout = found.value();
  const char* old_path = std::getenv("PYTHONPATH");
  std::string path = layout.python_dir;
  if (old_path != nullptr && *old_path != '\0')
    path += std::string(":") + old_path;
  setenv("PYTHONPATH", path.c_str(), 1);
  const char* python_env = std::getenv("DEEPCONTEXT_PYTHON");
  std::string python =
      python_env != nullptr && *python_env != '\0' ? python_env : "python3";
  std::vector<std::string> args = {python, "-m", "deepcontext._analyze",
                                   "--rules", request.rules_file};
  if (request.json) args.insert(args.end(), {"--format", "json"});
  if (request.top > 0)
    args.insert(args.end(), {"--top", std::to_string(request.top)});
  for (const std::string& id : request.only)
    args.insert(args.end(), {"--rule", id});
  args.insert(args.end(), request.files.begin(), request.files.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::cout.flush();
  execvp(argv[0], argv.data());
  err << kPrefix << "cannot run " << python
      << " for --rules: " << std::strerror(errno)
      << " (set DEEPCONTEXT_PYTHON)\n";
  return kAnalyzeBadArguments;
}

int RunAnalyzeOrThrow(const AnalyzeRequest& request, std::ostream& out,
                      std::ostream& err) {
  for (const std::string& id : request.only) {
    if (!KnownRule(id)) {
      err << kPrefix << "unknown rule '" << id
          << "' (--list-rules lists them)\n";
      return kAnalyzeBadArguments;
    }
  }
  if (!request.rules_file.empty()) {
    if (access(request.rules_file.c_str(), R_OK) != 0) {
      err << kPrefix << request.rules_file << ": " << std::strerror(errno)
          << "\n";
      return kAnalyzeBadArguments;
    }
    return ExecPythonAnalyzer(request, err);
  }
  std::optional<analysis::ProfileTree> tree =
      ReadProfileTree(request.files, kPrefix, err);
  if (!tree) return kAnalyzeBadFile;
  analyzer::Analysis analysis = analyzer::Analyze(*tree, {}, request.only);
  if (request.json) {
    if (request.top > 0 && analysis.findings.size() > request.top) {
      analysis.findings.resize(request.top);
    }
    out << analyzer::AnalysisToJson(analysis);
  } else {
    out << analyzer::RenderFindingsText(analysis, request.top);
  }
  out.flush();
  return kAnalyzeOk;
}

}  // namespace

int RunAnalyze(const AnalyzeRequest& request, std::ostream& out,
               std::ostream& err) {
  try {
    return RunAnalyzeOrThrow(request, out, err);
  } catch (const std::exception& e) {
    err << kPrefix << e.what() << "\n";
    return kAnalyzeBadFile;
  }
}

void AddAnalyzeCommand(CLI::App& app, std::function<int()>& action) {
  auto request = std::make_shared<AnalyzeRequest>();
  auto format = std::make_shared<std::string>("text");
  auto list = std::make_shared<bool>(false);
  CLI::App* command = app.add_subcommand(
      "analyze",
      "Find performance problems and suggest fixes, ranked by benefit");
  command->add_option("files", request->files, ".dctx profile files");
  command->add_option("--format", *format, "Output: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  command->add_option("--top", request->top, "Findings shown, 0 = all")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--rule", request->only,
                   "Run only this built-in rule (repeatable)")
      // One value per --rule, so files after it stay files.
      ->allow_extra_args(false);
  command->add_option("--rules", request->rules_file,
                      "Python file defining more rules (docs/ANALYZER.md)");
  command->add_flag("--list-rules", *list, "List the built-in rules and exit");
  command->callback([request, format, list, command, &action] {
    request->json = *format == "json";
    if (*list) {
      action = [] {
        for (const analyzer::Rule& rule : analyzer::BuiltinRules()) {
          std::cout << rule.id << "  " << rule.summary << "\n";
        }
        return kAnalyzeOk;
      };
      return;
    }
    if (request->files.empty()) {
      throw CLI::RequiredError("files");
    }
    (void)command;
    action = [request] { return RunAnalyze(*request, std::cout, std::cerr); };
  });
}

}  // namespace deepcontext::cli

// `deepcontext analyze`: the performance analyzer's findings for profiles.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace deepcontext::cli {

struct AnalyzeRequest {
  std::vector<std::string> files;
  bool json = false;
  size_t top = 0;                 // 0 = every finding
  std::vector<std::string> only;  // rule ids; empty = all built-in rules
  std::string rules_file;         // user rules (Python), "" = none
};

inline constexpr int kAnalyzeOk = 0;
inline constexpr int kAnalyzeBadFile = 1;
inline constexpr int kAnalyzeBadArguments = 2;

// Prints the findings for request's files; with rules_file set, hands the
// request to the Python package (user rules are Python), which calls back
// into the same analyzer through the reader library.
int RunAnalyze(const AnalyzeRequest& request, std::ostream& out,
               std::ostream& err);

// Registers `analyze FILES... [--format text|json] [--top N] [--rule ID]...
// [--rules FILE.py] [--list-rules]`.
void AddAnalyzeCommand(CLI::App& app, std::function<int()>& action);

}  // namespace deepcontext::cli

// `deepcontext diff`: compare two profiles (before / after a change).
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

#include <CLI/CLI.hpp>

namespace deepcontext::cli {

struct DiffRequest {
  std::string before;
  std::string after;
  std::string metric;         // empty: the report's default metric
  std::string format = "text";  // "text" or "json"
  std::string output = "-";   // file, or "-" for standard output
  int top = 20;
  int width = 0;
};

inline constexpr int kDiffOk = 0;
inline constexpr int kDiffBadFile = 1;  // an input unreadable, output unwritable
inline constexpr int kDiffUsage = 2;    // unknown metric

int RunDiff(const DiffRequest& request, std::ostream& out, std::ostream& err);

// Registers `diff BEFORE AFTER [--metric M] [--top N] [--format text|json]
// [-o OUT] [--width W]` on app.
void AddDiffCommand(CLI::App& app, std::function<int()>& action);

}  // namespace deepcontext::cli

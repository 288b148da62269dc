#include "tools/cli/diff_command.h"

#include <cerrno>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "tools/cli/profile_inputs.h"
#include "tools/diff/diff_render.h"
#include "tools/diff/profile_diff.h"

namespace deepcontext::cli {

namespace {

constexpr const char* kPrefix = "deepcontext diff: ";

int RunDiffOrThrow(const DiffRequest& request, std::ostream& out,
                   std::ostream& err) {
  std::optional<analysis::ProfileTree> before =
      ReadProfileTree({request.before}, kPrefix, err, /*sass=*/false);
  std::optional<analysis::ProfileTree> after =
      ReadProfileTree({request.after}, kPrefix, err, /*sass=*/false);
  if (!before || !after) return kDiffBadFile;
  diff::ProfileDiff result = diff::DiffProfiles(*before, *after);
  StatusOr<size_t> metric =
      diff::ChooseRankMetric(result, *before, *after, request.metric);
  if (!metric.ok()) {
    err << kPrefix << metric.status().message() << "\n";
    return kDiffUsage;
  }
  diff::DiffOptions options{request.before, request.after, metric.value(),
                            static_cast<size_t>(request.top),
                            static_cast<size_t>(request.width)};
  const std::string text =
      request.format == "json"
          ? diff::RenderDiffJson(*before, *after, result, options)
          : diff::RenderDiffText(*before, *after, result, options);
  if (request.output == "-") {
    out << text;
    out.flush();
    return out ? kDiffOk : kDiffBadFile;
  }
  std::ofstream file(request.output, std::ios::binary);
  file << text;
  file.close();
  if (!file) {
    err << kPrefix << "cannot write " << request.output << ": "
        << std::strerror(errno) << "\n";
    return kDiffBadFile;
  }
  return kDiffOk;
}

}  // namespace

int RunDiff(const DiffRequest& request, std::ostream& out, std::ostream& err) {
  try {
    return RunDiffOrThrow(request, out, err);
  } catch (const std::exception& e) {
    // Only resource failures (std::bad_alloc) are left to catch.
    err << kPrefix << e.what() << "\n";
    return kDiffBadFile;
  }
}

void AddDiffCommand(CLI::App& app, std::function<int()>& action) {
  auto request = std::make_shared<DiffRequest>();
  CLI::App* command = app.add_subcommand(
      "diff", "Compare two profiles: contexts ranked by change, added, removed");
  command->add_option("before", request->before, "profile before the change")
      ->required();
  command->add_option("after", request->after, "profile after the change")
      ->required();
  command->add_option("--metric", request->metric,
                      "Metric to rank by (default: the report's)");
  command->add_option("--top", request->top, "Contexts listed, 0 = all changed")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_option("--format", request->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  command->add_option("-o,--output", request->output,
                      "Output file, - for standard output")
      ->capture_default_str();
  command
      ->add_option("--width", request->width,
                   "Truncate names so lines fit this width, 0 = unlimited")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->callback([request, &action] {
    action = [request] { return RunDiff(*request, std::cout, std::cerr); };
  });
}

}  // namespace deepcontext::cli

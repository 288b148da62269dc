#include "tools/cli/merge_command.h"

#include <exception>
#include <iostream>
#include <memory>

#include "tools/merge/merge_files.h"

namespace deepcontext::cli {

namespace {
constexpr const char* kPrefix = "deepcontext merge: ";
}  // namespace

int RunMerge(const MergeRequest& request, std::ostream& out,
             std::ostream& err) {
  try {
    StatusOr<merge::MergeSummary> merged =
        merge::MergeProfileFiles(request.files, request.output);
    if (!merged.ok()) {
      err << kPrefix << merged.status().message() << "\n";
      return kMergeFailed;
    }
    if (!request.quiet) {
      out << "merged " << merged->processes << " profiles of "
          << merged->ranks << " ranks (" << merged->contexts
          << " calling contexts) into " << request.output << "\n";
    }
    return kMergeOk;
  } catch (const std::exception& e) {
    // Only resource failures (std::bad_alloc) are left to catch.
    err << kPrefix << e.what() << "\n";
    return kMergeFailed;
  }
}

void AddMergeCommand(CLI::App& app, std::function<int()>& action) {
  auto request = std::make_shared<MergeRequest>();
  CLI::App* command = app.add_subcommand(
      "merge",
      "Merge the per-rank profiles of one job, keeping each context's "
      "distribution across ranks");
  command->add_option("files", request->files, "per-rank .dctx profiles")
      ->required();
  command->add_option("-o,--output", request->output, "merged .dctx file")
      ->required();
  command->add_flag("-q,--quiet", request->quiet, "Print nothing on success");
  command->callback([request, &action] {
    action = [request] { return RunMerge(*request, std::cout, std::cerr); };
  });
}

}  // namespace deepcontext::cli

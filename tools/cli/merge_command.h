// `deepcontext merge`: combine the per-rank profiles of one distributed job
// into one profile that keeps each context's distribution across ranks.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace deepcontext::cli {

struct MergeRequest {
  std::vector<std::string> files;
  std::string output;
  bool quiet = false;
};

inline constexpr int kMergeOk = 0;
inline constexpr int kMergeFailed = 1;  // an input unreadable, a rank given
                                        // twice, or the output unwritable

// Merges request.files into request.output; one summary line on out unless
// quiet, problems on err. Returns a kMerge* status.
int RunMerge(const MergeRequest& request, std::ostream& out, std::ostream& err);

// Registers `merge FILES... -o OUT [-q]` on app.
void AddMergeCommand(CLI::App& app, std::function<int()>& action);

}  // namespace deepcontext::cli

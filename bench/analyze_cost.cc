// CPU cost of each step of `deepcontext analyze` on one profile, measured
// in-process on the process CPU clock (robust to a busy machine):
// `analyze_cost PROFILE.dctx [ROUNDS]` prints the median of ROUNDS (3) for
// reading the file, building the tree and running every rule.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/median.h"
#include "format/dctx_file.h"
#include "tools/analysis/profile_tree.h"
#include "tools/analyzer/analyzer.h"

namespace {

double CpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + now.tv_nsec / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PROFILE.dctx [ROUNDS]\n", argv[0]);
    return 2;
  }
  int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  std::vector<double> read_s, tree_s, rules_s;
  size_t nodes = 0, findings = 0;
  for (int round = 0; round < rounds; ++round) {
    double start = CpuSeconds();
    deepcontext::StatusOr<deepcontext::format::Profile> read =
        deepcontext::format::ReadProfileFile(argv[1]);
    if (!read.ok()) {
      std::fprintf(stderr, "%s\n", read.status().message().c_str());
      return 1;
    }
    double read_end = CpuSeconds();
    auto tree = deepcontext::analysis::ProfileTree::FromProfile(*read);
    double tree_end = CpuSeconds();
    auto analysis = deepcontext::analyzer::Analyze(tree);
    double rules_end = CpuSeconds();
    read_s.push_back(read_end - start);
    tree_s.push_back(tree_end - read_end);
    rules_s.push_back(rules_end - tree_end);
    nodes = tree.size();
    findings = analysis.findings.size();
  }
  using deepcontext::bench::Median;
  double total = Median(read_s) + Median(tree_s) + Median(rules_s);
  std::printf("tree nodes: %zu, findings: %zu (median of %d rounds, CPU s)\n",
              nodes, findings, rounds);
  std::printf("read file     %.3f s\n", Median(read_s));
  std::printf("build tree    %.3f s\n", Median(tree_s));
  std::printf("run rules     %.3f s\n", Median(rules_s));
  std::printf("total         %.3f s  (%.2fx the 2 s budget)\n", total,
              total / 2.0);
  return 0;
}

// Where `deepcontext view` spends the time before its first answer on a
// large profile: reading the file, building the tree, writing view data
// (the JSON form for scripts and exports, the binary one the page reads).
//   view_load_cost PROFILE.dctx
#include <chrono>
#include <cstdio>

#include "format/dctx_file.h"
#include "tools/analysis/profile_tree.h"
#include "tools/export/view_data.h"
#include "tools/export/view_data_binary.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s PROFILE.dctx\n", argv[0]);
    return 2;
  }
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  auto t0 = Clock::now();
  auto read = deepcontext::format::ReadProfileFile(argv[1]);
  if (!read.ok) {
    std::fprintf(stderr, "%s\n", read.error.c_str());
    return 1;
  }
  auto t1 = Clock::now();
  auto tree = deepcontext::analysis::ProfileTree::FromProfile(read.profile, argv[1]);
  auto t2 = Clock::now();
  std::string data = deepcontext::exporter::RenderViewData(tree);
  auto t3 = Clock::now();
  std::string binary = deepcontext::exporter::RenderViewBinary(tree);
  auto t4 = Clock::now();
  std::printf(
      "nodes %zu  read %.0f ms  tree %.0f ms  view data: JSON %.0f ms "
      "(%.1f MB), binary %.0f ms (%.1f MB)\n",
      tree.size(), ms(t0, t1), ms(t1, t2), ms(t2, t3), data.size() / 1e6,
      ms(t3, t4), binary.size() / 1e6);
  return 0;
}

// Where `deepcontext view` spends the time before its first answer on a
// large profile, step by step as its loader runs them: reading the file,
// building the tree (taking the file's profile over), the binary view data
// the first screen waits for; then what it makes later, on request: the
// samples' count/min/max and the JSON form (scripts and exports). Wall
// time and this process's CPU time per step (the CPU time is steadier on a
// busy machine).
//   view_load_cost PROFILE.dctx
#include <time.h>

#include <chrono>
#include <cstdio>
#include <utility>
#include <vector>

#include "format/dctx_file.h"
#include "tools/analysis/profile_tree.h"
#include "tools/export/view_data.h"
#include "tools/export/view_data_binary.h"

namespace {

struct Clocks {
  std::chrono::steady_clock::time_point wall;
  double cpu_ms;
  static Clocks Now() {
    timespec cpu{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
    return {std::chrono::steady_clock::now(),
            cpu.tv_sec * 1e3 + cpu.tv_nsec / 1e6};
  }
};

void Step(const char *name, const Clocks &from, const Clocks &to,
          const char *extra = "") {
  std::printf(
      "  %-34s %6.0f ms wall  %6.0f ms CPU%s\n", name,
      std::chrono::duration<double, std::milli>(to.wall - from.wall).count(),
      to.cpu_ms - from.cpu_ms, extra);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s PROFILE.dctx\n", argv[0]);
    return 2;
  }
  Clocks t0 = Clocks::Now();
  auto read = deepcontext::format::ReadProfileFile(argv[1]);
  if (!read.ok()) {
    std::fprintf(stderr, "%s\n", read.status().message().c_str());
    return 1;
  }
  Clocks t1 = Clocks::Now();
  std::vector<deepcontext::format::Profile> owned;
  owned.push_back(std::move(*read));
  auto tree = deepcontext::analysis::ProfileTree::FromOwnedProfiles(
      std::move(owned), {argv[1]});
  Clocks t2 = Clocks::Now();
  std::string binary = deepcontext::exporter::RenderViewBinary(tree);
  Clocks t3 = Clocks::Now();
  std::string stats = deepcontext::exporter::RenderViewStatsBinary(tree);
  Clocks t4 = Clocks::Now();
  std::string json = deepcontext::exporter::RenderViewData(tree);
  Clocks t5 = Clocks::Now();
  char size[64];
  std::printf("nodes %zu, frames %zu\n", tree.size(), tree.frames().size());
  std::printf("before the first answer:\n");
  Step("read", t0, t1);
  Step("tree", t1, t2);
  std::snprintf(size, sizeof(size), "  (%.1f MB)", binary.size() / 1e6);
  Step("binary view data (tree.bin)", t2, t3, size);
  Step("total", t0, t3);
  std::printf("later, on request:\n");
  std::snprintf(size, sizeof(size), "  (%.1f MB)", stats.size() / 1e6);
  Step("samples' count/min/max", t3, t4, size);
  std::snprintf(size, sizeof(size), "  (%.1f MB)", json.size() / 1e6);
  Step("JSON view data", t4, t5, size);
  return 0;
}

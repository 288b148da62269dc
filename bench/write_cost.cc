// Memory and time the runtime needs to write a large profile at exit.
//
//     build/bin/write_cost [contexts (1000000)] [out.dctx]
//
// Builds a calling context tree of about <contexts> distinct op paths (an
// outer op of 1000 names, each with inner ops of <contexts>/1000 names)
// through the public DLMonitor ABI, each measured, then writes it with
// deepcontext_write. Prints the process's resident memory before the write,
// the peak the write added on top (VmHWM reset just before it, through
// /proc/self/clear_refs), their ratio, and the time the write took.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "deepcontext/profiler.h"
#include "tests/unit/runtime/emit_op.h"

namespace {

using deepcontext::testing::EmitOp;

// Returns a field of /proc/self/status ("VmRSS", "VmHWM") in MB.
double StatusMb(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      return std::strtod(line.c_str() + field.size() + 1, nullptr) / 1024;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const long contexts = argc > 1 ? std::atol(argv[1]) : 1'000'000;
  const std::string path =
      argc > 2 ? argv[2]
               : "/tmp/write_cost." + std::to_string(getpid()) + ".dctx";
  if (contexts < 1000) {
    std::fprintf(stderr, "usage: %s [contexts >= 1000] [out.dctx]\n", argv[0]);
    return 2;
  }
  constexpr long kOuter = 1000;
  const long inner = contexts / kOuter;
  std::vector<std::string> outer_names, inner_names;
  for (long i = 0; i < kOuter; ++i)
    outer_names.push_back("outer_op_" + std::to_string(i));
  for (long i = 0; i < inner; ++i)
    inner_names.push_back("inner_op_" + std::to_string(i));

  if (deepcontext_start() != 0) {
    std::fprintf(stderr, "start failed: %s\n", deepcontext_last_error());
    return 1;
  }
  uint64_t id = 0;
  for (long o = 0; o < kOuter; ++o) {
    const uint64_t outer_id = ++id;
    EmitOp(outer_names[o].c_str(), outer_id, DLMONITOR_PHASE_ENTER);
    for (long i = 0; i < inner; ++i) {
      const uint64_t inner_id = ++id;
      EmitOp(inner_names[i].c_str(), inner_id, DLMONITOR_PHASE_ENTER);
      EmitOp(inner_names[i].c_str(), inner_id, DLMONITOR_PHASE_EXIT);
    }
    EmitOp(outer_names[o].c_str(), outer_id, DLMONITOR_PHASE_EXIT);
  }
  deepcontext_stop();

  const double before = StatusMb("VmRSS");
  {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";  // resets VmHWM to the current resident size
  }
  const auto start = std::chrono::steady_clock::now();
  const int status = deepcontext_write(path.c_str());
  const auto end = std::chrono::steady_clock::now();
  if (status != 0) {
    std::fprintf(stderr, "write failed: %s\n", deepcontext_last_error());
    return 1;
  }
  const double peak = StatusMb("VmHWM");
  std::printf("contexts written         %ld (+ %ld outer, thread, root)\n",
              kOuter * inner, kOuter);
  std::printf("resident before write    %.0f MB\n", before);
  std::printf("added during write       %.0f MB (%.2fx the resident state)\n",
              peak - before, (peak - before) / before);
  std::printf("write time               %.2f s\n",
              std::chrono::duration<double>(end - start).count());
  if (argc <= 2) std::remove(path.c_str());
  return 0;
}

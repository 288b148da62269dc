// Writes the .dctx files the `deepcontext report` integration tests read:
// two ranks of the training example, a profile whose gpu_time metric has no
// values, a file with foreign bytes, a truncated copy of a real profile,
// and two small hostile files: millions of empty strings compressed to a few
// KB, and 8k metrics over 8k nodes.
#include <cstdio>
#include <fstream>
#include <string>

#include "format/dctx_file.h"
#include "tests/unit/tools/analysis/test_profiles.h"

namespace {

using deepcontext::format::EncodeProfile;
using deepcontext::format::Profile;
using deepcontext::format::WriteProfileFile;

bool Write(const Profile& profile, const std::string& path) {
  std::string error = WriteProfileFile(profile, path);
  if (!error.empty()) std::fprintf(stderr, "%s\n", error.c_str());
  return error.empty();
}

bool WriteBytes(const std::string& bytes, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  // Paths are built with append: GCC 12 at -O3 warns (-Wrestrict, a known
  // false positive) on some string operator+ chains.
  auto path = [dir = std::string(argv[1])](const char* name) {
    std::string result = dir;
    result += '/';
    result += name;
    return result;
  };
  Profile rank0 = deepcontext::analysis::testing::MakeTrainingProfile();
  Profile rank1 = rank0;
  for (auto& [key, value] : rank1.metadata) {
    if (key == "rank") value = std::string("1");
    if (key == "pid") value = std::string("4243");
  }
  Profile no_gpu = rank0;
  no_gpu.metrics.push_back({"gpu_time", "ns", "GPU kernel time"});

  Profile empty_strings;
  empty_strings.strings.resize(4'000'000);
  Profile many_metrics;
  many_metrics.strings.push_back("main thread");
  many_metrics.strings.push_back("f");
  many_metrics.nodes.push_back(
      {0, deepcontext::format::FrameKind::kThread, 1, 0, 0});
  for (uint32_t i = 0; i < 8'000; ++i) {
    many_metrics.metrics.push_back({"m" + std::to_string(i), "count", ""});
    many_metrics.nodes.push_back(
        {1, deepcontext::format::FrameKind::kPythonFrame, 2, 0, i + 1});
    many_metrics.values.push_back({i + 2, i, 1, 1, 1, 1});
  }

  std::string encoded = EncodeProfile(rank0);
  bool ok = Write(rank0, path("rank0.dctx")) &&
            Write(rank1, path("rank1.dctx")) &&
            Write(no_gpu, path("no_gpu.dctx")) &&
            WriteBytes("this is not a profile\n", path("foreign.dctx")) &&
            WriteBytes(encoded.substr(0, encoded.size() / 2),
                       path("truncated.dctx")) &&
            Write(empty_strings, path("empty_strings.dctx")) &&
            Write(many_metrics, path("many_metrics.dctx"));
  return ok ? 0 : 1;
}

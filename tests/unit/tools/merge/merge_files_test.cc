#include "tools/merge/merge_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "format/dctx_file.h"
#include "tests/unit/scratch_dir.h"
#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::merge {
namespace {

using analysis::testing::MakeTrainingProfileOf;

class MergeFilesTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& rank) {
    std::string path = (dir_ / name).string();
    EXPECT_TRUE(
        format::WriteProfileFile(MakeTrainingProfileOf("10" + rank, rank), path)
            .ok());
    return path;
  }

  ScratchDir scratch_;
  const std::filesystem::path dir_ = scratch_.path();
};

TEST_F(MergeFilesTest, MergesFilesIntoAReadableProfile) {
  std::string out = (dir_ / "job.dctx").string();
  StatusOr<MergeSummary> summary = MergeProfileFiles(
      {Write("a.dctx", "0"), Write("b.dctx", "1"), Write("c.dctx", "2")}, out);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->ranks, 3u);
  EXPECT_EQ(summary->processes, 3u);
  StatusOr<format::Profile> read = format::ReadProfileFile(out);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->Metadata("merged_ranks"), "3");
  EXPECT_EQ(read->nodes.size(), summary->contexts);
  // The training profile has 13 nodes plus the root; all ranks share them.
  EXPECT_EQ(summary->contexts, 14u);
}

TEST_F(MergeFilesTest, AnUnreadableInputWritesNothing) {
  std::string bad = (dir_ / "bad.dctx").string();
  std::ofstream(bad) << "not a profile";
  std::string out = (dir_ / "job.dctx").string();
  StatusOr<MergeSummary> summary =
      MergeProfileFiles({Write("a.dctx", "0"), bad}, out);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().message(),
            bad + ": not a DeepContext profile (bad magic)");
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(MergeFilesTest, NoInputsIsAnError) {
  EXPECT_FALSE(MergeProfileFiles({}, (dir_ / "job.dctx").string()).ok());
}

}  // namespace
}  // namespace deepcontext::merge

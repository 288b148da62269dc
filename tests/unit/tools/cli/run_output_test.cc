#include "tools/cli/run_output.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/unit/scratch_dir.h"

namespace deepcontext::cli {
namespace {

namespace fs = std::filesystem;

class RunOutputTest : public ::testing::Test {
 protected:
  std::string Touch(const std::string& name) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << "x";
    return path;
  }

  // A pid that ran and ended: no process has it now.
  static pid_t DeadPid() {
    const pid_t pid = fork();
    if (pid == 0) _exit(0);
    waitpid(pid, nullptr, 0);
    return pid;
  }

  ScratchDir scratch_;
  const fs::path dir_ = scratch_.path();
};

TEST_F(RunOutputTest, OutputIsMadeAbsoluteAndDefaultsToTheStem) {
  EXPECT_EQ(ResolveOutputPath("/a/b/../c.txt", "x"), "/a/c.txt");
  EXPECT_EQ(ResolveOutputPath("", "train"),
            (fs::current_path() / "train.dctx").string());
}

TEST_F(RunOutputTest, StemDropsOnlyAFinalDctx) {
  EXPECT_EQ(OutputStem("/d/run.dctx"), "run");
  EXPECT_EQ(OutputStem("/d/notes.txt"), "notes.txt");
  EXPECT_EQ(OutputStem("/d/.dctx"), ".dctx");
}

TEST_F(RunOutputTest, RegularFilesAndNewNamesAreAccepted) {
  EXPECT_TRUE(CheckOutputPath((dir_ / "new.dctx").string()).ok());
  EXPECT_TRUE(CheckOutputPath(Touch("old.txt")).ok());
}

TEST_F(RunOutputTest, DirectoriesDevicesAndLongNamesAreRefused) {
  Status status = CheckOutputPath(dir_.string());
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("is a directory"), std::string::npos);
  status = CheckOutputPath("/dev/null");
  EXPECT_NE(status.message().find("not a regular file"), std::string::npos);
  ASSERT_EQ(mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  EXPECT_FALSE(CheckOutputPath((dir_ / "fifo").string()).ok());
  const std::string longest(kMaxOutputNameBytes, 'a');
  EXPECT_TRUE(CheckOutputPath((dir_ / longest).string()).ok());
  status = CheckOutputPath((dir_ / (longest + "a")).string());
  EXPECT_NE(status.message().find("bytes long"), std::string::npos);
  status = CheckOutputPath((dir_ / "missing" / "x.dctx").string());
  EXPECT_NE(status.message().find("cannot write profiles to"),
            std::string::npos);
}

TEST_F(RunOutputTest, OnlyTemporariesOfThisOutputFromDeadWritersGo) {
  const std::string dead = std::to_string(DeadPid());
  const std::string alive = std::to_string(getpid());
  const std::string output = (dir_ / "out.dctx").string();
  const std::string stale_root = Touch("out.dctx." + dead + ".0.tmp");
  const std::string stale_worker = Touch("out.77.dctx." + dead + ".3.tmp");
  const std::string second_root = Touch("out.dctx." + dead + ".1.tmp");
  const std::string live = Touch("out.dctx." + alive + ".0.tmp");
  const std::string other = Touch("outer.dctx." + dead + ".0.tmp");
  const std::string not_temporary = Touch("out.dctx." + dead + ".x.tmp");
  EXPECT_EQ(RemoveStaleTemporaries(output), 3);
  EXPECT_FALSE(fs::exists(stale_root));
  EXPECT_FALSE(fs::exists(stale_worker));
  EXPECT_FALSE(fs::exists(second_root));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_TRUE(fs::exists(not_temporary));
}

TEST_F(RunOutputTest, ShortenedTemporariesOfALongOutputGo) {
  const std::string dead = std::to_string(DeadPid());
  const std::string name(kMaxOutputNameBytes, 'n');
  // format/file_io.cc cuts the name so the temporary fits 255 bytes.
  const std::string worker = name + ".rank12.4194303.dctx";
  const std::string suffix = "." + dead + ".0.tmp";
  ASSERT_GT(worker.size() + suffix.size(), 255u);
  const std::string stale =
      Touch(worker.substr(0, 255 - suffix.size()) + suffix);
  EXPECT_EQ(RemoveStaleTemporaries((dir_ / name).string()), 1);
  EXPECT_FALSE(fs::exists(stale));
}

}  // namespace
}  // namespace deepcontext::cli

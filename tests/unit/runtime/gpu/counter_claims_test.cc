#include "runtime/gpu/counter_claims.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/unit/scratch_dir.h"

namespace deepcontext::gpu {
namespace {

class CounterClaimsTest : public ::testing::Test {
 protected:
  std::string ReadFile(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // Runs `take` in a child process, which then holds what it took until
  // *release_fd is closed (EndChild); `take` says whether it got it.
  pid_t HoldInChild(const std::function<bool()>& take, int* release_fd) {
    int ready[2], release[2];
    EXPECT_EQ(pipe(ready), 0);
    EXPECT_EQ(pipe(release), 0);
    const pid_t child = fork();
    if (child == 0) {
      close(ready[0]);
      close(release[1]);
      const char ok = take() ? 'y' : 'n';
      (void)!write(ready[1], &ok, 1);
      char byte;
      (void)!read(release[0], &byte, 1);  // returns at EOF
      _exit(0);
    }
    close(ready[1]);
    close(release[0]);
    char ok = 0;
    EXPECT_EQ(read(ready[0], &ok, 1), 1);
    EXPECT_EQ(ok, 'y');
    close(ready[0]);
    *release_fd = release[1];
    return child;
  }

  // Claims `key` in `dir_` from `CounterClaims` of a child process.
  bool ClaimHere(const std::string& key) {
    auto* claims = new CounterClaims(dir_);  // kept: the child ends in _exit
    auto claim = claims->Claim(key, "GPU hardware counters");
    return claim.ok() && (*claim)->uncoordinated().empty() && claim->release() != nullptr;
  }

  pid_t ClaimInChild(const std::string& key, int* release_fd) {
    return HoldInChild([&] { return ClaimHere(key); }, release_fd);
  }

  // Locks `path` in a child without writing into it, as a holder that may
  // only read another user's file does.
  pid_t LockWithoutTextInChild(const std::string& path, int* release_fd) {
    return HoldInChild(
        [&] {
          const int fd = open(path.c_str(), O_RDONLY);
          return fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
        },
        release_fd);
  }

  void EndChild(pid_t child, int release_fd) {
    close(release_fd);
    int status = 0;
    EXPECT_EQ(waitpid(child, &status, 0), child);
  }

  ScratchDir scratch_;
  const std::string dir_ = scratch_.path();
};

TEST_F(CounterClaimsTest, AClaimWritesWhoHoldsTheDevice) {
  CounterClaims claims(dir_);
  auto claim = claims.Claim("GPU-1234", "GPU instruction samples");
  ASSERT_TRUE(claim.ok()) << claim.status().message();
  EXPECT_EQ((*claim)->uncoordinated(), "");
  const std::string path = dir_ + "/deepcontext-gpu-GPU-1234.lock";
  EXPECT_EQ(claims.PathFor("GPU-1234"), path);
  const std::string text = ReadFile(path);
  EXPECT_EQ(text.rfind("pid " + std::to_string(getpid()) + " (", 0), 0u) << text;
  EXPECT_NE(text.find(", GPU instruction samples\n"), std::string::npos) << text;
  struct stat info {};
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0666u);  // other users' processes can lock it too
}

TEST_F(CounterClaimsTest, AnotherProcessIsRefusedWithTheHoldersName) {
  int release = -1;
  const pid_t child = ClaimInChild("GPU-1234", &release);
  CounterClaims claims(dir_);
  auto refused = claims.Claim("GPU-1234", "GPU instruction samples");
  ASSERT_FALSE(refused.ok());
  const std::string& message = refused.status().message();
  EXPECT_NE(message.find("GPU GPU-1234 is in use by pid " + std::to_string(child) + " ("),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("GPU hardware counters: one process per GPU"), std::string::npos)
      << message;
  EXPECT_NE(message.find(claims.PathFor("GPU-1234")), std::string::npos) << message;

  // Other devices are free.
  EXPECT_TRUE(claims.Claim("GPU-5678", "GPU instruction samples").ok());

  // The holder ends (as a crash would end it): the device is free again.
  close(release);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  auto claimed = claims.Claim("GPU-1234", "GPU instruction samples");
  EXPECT_TRUE(claimed.ok()) << claimed.status().message();
}

TEST_F(CounterClaimsTest, AClaimThatEndsTakesItsNameOutOfTheLockFile) {
  CounterClaims claims(dir_);
  const std::string path = claims.PathFor("GPU-1234");
  claims.Claim("GPU-1234", "GPU instruction samples")->reset();
  EXPECT_EQ(ReadFile(path), "");

  // The next holder cannot write its own text: it is not taken for this
  // process, which no longer holds the GPU.
  int release = -1;
  const pid_t child = LockWithoutTextInChild(path, &release);
  auto refused = claims.Claim("GPU-1234", "GPU instruction samples");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("GPU GPU-1234 is in use by another process: "),
            std::string::npos)
      << refused.status().message();
  EndChild(child, release);
}

TEST_F(CounterClaimsTest, AHolderThatEndedWithoutLettingGoIsNotNamed) {
  // A process that crashed holding the GPU: the kernel dropped its lock,
  // its text stayed.
  const pid_t ended = fork();
  if (ended == 0) _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(ended, &status, 0), ended);
  CounterClaims claims(dir_);
  const std::string path = claims.PathFor("GPU-1234");
  std::ofstream(path) << "pid " << ended << " (python3 crashed.py), GPU hardware counters\n";

  int release = -1;
  const pid_t child = LockWithoutTextInChild(path, &release);
  auto refused = claims.Claim("GPU-1234", "GPU instruction samples");
  ASSERT_FALSE(refused.ok());
  const std::string& message = refused.status().message();
  EXPECT_NE(message.find("is in use by another process: "), std::string::npos) << message;
  EXPECT_EQ(message.find("crashed.py"), std::string::npos) << message;
  EndChild(child, release);

  // Free again, the file now names this process.
  auto claim = claims.Claim("GPU-1234", "GPU instruction samples");
  ASSERT_TRUE(claim.ok()) << claim.status().message();
  EXPECT_EQ(ReadFile(path).rfind("pid " + std::to_string(getpid()) + " (", 0), 0u);
}

TEST_F(CounterClaimsTest, AnotherUsersProcessClaimsThroughTheSameFile) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to run a child as another user";
  CounterClaims claims(dir_);
  claims.Claim("GPU-1234", "GPU instruction samples")->reset();  // root's file now
  ASSERT_EQ(chmod(dir_.c_str(), 01777), 0);  // as /tmp

  int release = -1;
  const pid_t child = HoldInChild(
      [&] { return setgid(65534) == 0 && setuid(65534) == 0 && ClaimHere("GPU-1234"); },
      &release);
  auto refused = claims.Claim("GPU-1234", "GPU instruction samples");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("in use by pid " + std::to_string(child) + " ("),
            std::string::npos)
      << refused.status().message();
  EndChild(child, release);
}

TEST_F(CounterClaimsTest, ClaimsInOneProcessNestAndTheLastOneGivesTheDeviceBack) {
  CounterClaims claims(dir_);
  auto first = claims.Claim("GPU-1234", "GPU instruction samples");
  auto second = claims.Claim("GPU-1234", "GPU instruction samples");
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());

  CounterClaims other_process(dir_);  // its own open file: flock tells them apart
  EXPECT_FALSE(other_process.Claim("GPU-1234", "GPU hardware counters").ok());
  first->reset();
  EXPECT_FALSE(other_process.Claim("GPU-1234", "GPU hardware counters").ok());
  second->reset();
  EXPECT_TRUE(other_process.Claim("GPU-1234", "GPU hardware counters").ok());
}

TEST_F(CounterClaimsTest, AForkedChildDoesNotGiveTheParentsClaimAway) {
  CounterClaims claims(dir_);
  auto claim = claims.Claim("GPU-1234", "GPU instruction samples");
  ASSERT_TRUE(claim.ok());
  claims.LockBeforeFork();
  const pid_t child = fork();
  if (child == 0) {
    claims.ForgetInChild();
    claim->reset();  // releases nothing in the child
    _exit(0);
  }
  claims.UnlockAfterFork();
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  CounterClaims other_process(dir_);
  EXPECT_FALSE(other_process.Claim("GPU-1234", "GPU hardware counters").ok());
}

TEST_F(CounterClaimsTest, AnUnusableLockDirectoryStillLetsTheProcessMeasure) {
  CounterClaims claims(dir_ + "/missing");
  auto claim = claims.Claim("GPU-1234", "GPU instruction samples");
  ASSERT_TRUE(claim.ok());
  EXPECT_EQ((*claim)->uncoordinated(),
            "cannot open " + dir_ + "/missing/deepcontext-gpu-GPU-1234.lock: "
            "No such file or directory");
  auto nested = claims.Claim("GPU-1234", "GPU instruction samples");
  ASSERT_TRUE(nested.ok());
  EXPECT_EQ((*nested)->uncoordinated(), (*claim)->uncoordinated());
}

TEST_F(CounterClaimsTest, DeviceKeysBecomePlainFileNames) {
  CounterClaims claims(dir_);
  EXPECT_EQ(claims.PathFor("MIG-a1/b2 c"), dir_ + "/deepcontext-gpu-MIG-a1_b2_c.lock");
}

TEST(SessionClaimsTest, ClaimsOnlyWhenToldHowAndNotesAnUnguardedGpu) {
  SessionClaims session;
  auto none = session.Claim(nullptr);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  EXPECT_EQ(session.StatusNote(), "");

  session.SetClaimDevice([](void*) { return CounterClaims::Unnamed("no UUID for device 0"); });
  auto unguarded = session.Claim(nullptr);
  ASSERT_TRUE(unguarded.ok());
  ASSERT_NE(*unguarded, nullptr);
  EXPECT_EQ(session.StatusNote(), "; other processes not kept off the GPU: no UUID for device 0");

  session.SetClaimDevice([](void*) -> StatusOr<std::unique_ptr<CounterClaim>> {
    return Status::Error("GPU GPU-0 is in use by pid 1");
  });
  auto refused = session.Claim(nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "GPU GPU-0 is in use by pid 1");
}

}  // namespace
}  // namespace deepcontext::gpu

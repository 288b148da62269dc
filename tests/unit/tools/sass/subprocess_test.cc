#include "tools/sass/subprocess.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace deepcontext::sass {
namespace {

using std::chrono::milliseconds;

TEST(RunProgram, ReturnsStandardOutputAndPassesArgumentsUnchanged) {
  // No shell: the quote, the semicolon and the space reach the program as
  // they are.
  auto result = RunProgram({"/bin/echo", "a b", "'x';", "$HOME"}, ProgramLimits{});
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result.value(), "a b 'x'; $HOME\n");
}

TEST(RunProgram, AFailureCarriesItsStatusAndFirstErrorLine) {
  auto result = RunProgram({"/bin/sh", "-c", "echo out; echo 'bad cubin' >&2; echo more >&2; exit 3"},
                           ProgramLimits{});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "/bin/sh: exit status 3: bad cubin");
}

TEST(RunProgram, AProgramPastItsTimeoutIsKilled) {
  ProgramLimits limits;
  limits.timeout = milliseconds(200);
  const auto start = std::chrono::steady_clock::now();
  auto result = RunProgram({"/bin/sleep", "30"}, limits);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "/bin/sleep: killed after 0.2 s without finishing");
  EXPECT_LT(took, std::chrono::seconds(10));
}

TEST(RunProgram, OutputBeyondTheLimitIsRefused) {
  ProgramLimits limits;
  limits.max_output_bytes = 1000;
  auto result = RunProgram({"/bin/sh", "-c", "yes | head -c 100000"}, limits);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("of output"), std::string::npos);
}

TEST(RunProgram, AMissingProgramIsAnError) {
  auto result = RunProgram({"/no/such/nvdisasm", "-c", "x"}, ProgramLimits{});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "/no/such/nvdisasm: cannot run: No such file or directory");
}

}  // namespace
}  // namespace deepcontext::sass

#include "tools/sass/disassembler.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/unit/scratch_dir.h"

namespace deepcontext::sass {
namespace {

const std::string kFixtures = DC_SASS_FIXTURES;
const std::string kFakeToolkit = kFixtures + "/fake_toolkit";

NvdisasmSearch Nowhere() {
  NvdisasmSearch search;
  search.default_dir = "";
  return search;
}

TEST(FindNvdisasm, LooksInCudaHomeThenTheDefaultFolderThenPath) {
  NvdisasmSearch search = Nowhere();
  search.path = "/no/such:" + kFakeToolkit + "/bin";
  EXPECT_EQ(FindNvdisasm(search), kFakeToolkit + "/bin/nvdisasm");
  search.path = "";
  search.default_dir = kFakeToolkit + "/bin";
  EXPECT_EQ(FindNvdisasm(search), kFakeToolkit + "/bin/nvdisasm");
  search.default_dir = "/no/such";
  search.cuda_home = kFakeToolkit;
  EXPECT_EQ(FindNvdisasm(search), kFakeToolkit + "/bin/nvdisasm");
}

TEST(FindNvdisasm, AnExplicitProgramIsTheOnlyOneConsidered) {
  NvdisasmSearch search = Nowhere();
  search.cuda_home = kFakeToolkit;
  search.program = kFakeToolkit + "/bin/nvdisasm";
  EXPECT_EQ(FindNvdisasm(search), search.program);
  search.program = "/no/such/nvdisasm";
  EXPECT_EQ(FindNvdisasm(search), std::nullopt);
}

TEST(FindNvdisasm, MissingEverywhereIsNullopt) {
  NvdisasmSearch search = Nowhere();
  search.cuda_home = "/no/such/cuda";
  search.path = "/no/such/bin::/usr/share";
  EXPECT_EQ(FindNvdisasm(search), std::nullopt);
  EXPECT_NE(NvdisasmMissingNote().find("CUDA toolkit"), std::string::npos);
  EXPECT_EQ(NvdisasmMissingNote().find('\n'), std::string::npos);
}

TEST(Disassembler, RunsNvdisasmOncePerCubin) {
  ScratchDir scratch;
  const std::string log = scratch.path() + "/nvdisasm.log";
  setenv("FAKE_NVDISASM_LOG", log.c_str(), 1);
  Disassembler disassembler(kFakeToolkit + "/bin/nvdisasm");
  const std::string cubin = kFixtures + "/scale_add.cubin";
  for (int i = 0; i < 3; ++i) {
    auto listing = disassembler.Listing(cubin);
    ASSERT_TRUE(listing.ok()) << listing.status().message();
    ASSERT_NE(listing.value()->Find("scale_add", 0x130), nullptr);
    EXPECT_EQ(*listing.value()->Find("scale_add", 0x130), "STG.E.128 desc[UR4][R4.64], R8");
  }
  // A cubin nvdisasm refuses: its error, kept as well.
  const std::string other = kFixtures + "/scale_add.cu";
  for (int i = 0; i < 2; ++i) {
    auto failed = disassembler.Listing(other);
    ASSERT_FALSE(failed.ok());
    EXPECT_NE(failed.status().message().find("exit status 1: nvdisasm fatal"),
              std::string::npos)
        << failed.status().message();
  }
  unsetenv("FAKE_NVDISASM_LOG");
  EXPECT_EQ(disassembler.runs(), 2);
  std::ifstream in(log);
  std::stringstream calls;
  calls << in.rdbuf();
  EXPECT_EQ(calls.str(), "-c " + cubin + "\n-c " + other + "\n");
}

// On a machine with the CUDA toolkit: the real nvdisasm reads the fixture
// cubin, and its instructions at each offset have the opcodes of the
// fixture listing the other tests use.
TEST(Disassembler, TheRealNvdisasmAgreesWithTheFixtureListing) {
  const auto nvdisasm = FindNvdisasm(NvdisasmSearch::FromEnvironment());
  if (!nvdisasm || nvdisasm->find("fake_toolkit") != std::string::npos) {
    GTEST_SKIP() << "no nvdisasm (CUDA toolkit) on this machine";
  }
  Disassembler disassembler(*nvdisasm);
  auto real = disassembler.Listing(kFixtures + "/scale_add.cubin");
  ASSERT_TRUE(real.ok()) << real.status().message();
  std::ifstream in(kFixtures + "/scale_add.sass.txt");
  std::stringstream text;
  text << in.rdbuf();
  const SassListing fixture = SassListing::Parse(text.str());
  auto opcode = [](const std::string& instruction) {
    std::istringstream words(instruction);
    std::string word;
    words >> word;
    if (word.starts_with("@")) words >> word;
    return word;
  };
  for (const char* function : {"scale_add", "_Z6squarePfi"}) {
    for (uint64_t offset = 0; offset < 0x140; offset += 0x10) {
      const std::string* expected = fixture.Find(function, offset);
      if (expected == nullptr) continue;
      const std::string* found = real.value()->Find(function, offset);
      ASSERT_NE(found, nullptr) << function << " " << offset;
      EXPECT_EQ(opcode(*found), opcode(*expected)) << function << " " << offset;
    }
  }
}

}  // namespace
}  // namespace deepcontext::sass

#include "tools/sass/profile_sass.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/unit/scratch_dir.h"
#include "tests/unit/tools/analysis/stall_profile.h"
#include "tools/sass/instruction_sass.h"

namespace deepcontext::sass {
namespace {

namespace fs = std::filesystem;

class ProfileSassTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directory(root_ / "run.cubins");
    fs::copy_file(std::string(DC_SASS_FIXTURES) + "/scale_add.cubin",
                  root_ / "run.cubins" /
                      (std::string(analysis::testing::kSassCubinName) + ".cubin"));
  }

  ScratchDir scratch_;
  const fs::path root_ = scratch_.path();
};

TEST_F(ProfileSassTest, TheMissingNvdisasmNoteComesOncePerCommand) {
  NvdisasmSearch nowhere;
  nowhere.default_dir = "";
  ProfileSass sass(nowhere);
  const std::string dir = (root_ / "run.cubins").string();
  format::Profile first = analysis::testing::MakeSassProfile(dir);
  format::Profile second = analysis::testing::MakeSassProfile(dir);
  const auto notes = sass.Annotate(first, (root_ / "run.1.dctx").string());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], NvdisasmMissingNote());
  EXPECT_TRUE(sass.Annotate(second, (root_ / "run.2.dctx").string()).empty());
}

TEST_F(ProfileSassTest, ProfilesOfOneRunShareTheirCubins) {
  NvdisasmSearch search;
  search.program = std::string(DC_SASS_FIXTURES) + "/fake_toolkit/bin/nvdisasm";
  ProfileSass sass(search);
  const std::string dir = (root_ / "run.cubins").string();
  for (const char* name : {"run.1.dctx", "run.2.dctx"}) {
    format::Profile profile = analysis::testing::MakeSassProfile(dir);
    EXPECT_TRUE(sass.Annotate(profile, (root_ / name).string()).empty());
    bool found = false;
    for (const std::string& text : profile.strings) {
      found |= text == "pc 0x0130: STG.E.128 desc[UR4][R4.64], R8";
    }
    EXPECT_TRUE(found) << name;
  }
}

TEST_F(ProfileSassTest, TheNextCommandReadsTheListingKeptBesideTheCubin) {
  const std::string log = (root_ / "nvdisasm.log").string();
  setenv("FAKE_NVDISASM_LOG", log.c_str(), 1);
  NvdisasmSearch search;
  search.program = std::string(DC_SASS_FIXTURES) + "/fake_toolkit/bin/nvdisasm";
  const std::string dir = (root_ / "run.cubins").string();
  for (int command = 0; command < 2; ++command) {
    ProfileSass sass(search);  // one per command
    format::Profile profile = analysis::testing::MakeSassProfile(dir);
    EXPECT_TRUE(sass.Annotate(profile, (root_ / "run.dctx").string()).empty());
    EXPECT_NE(std::find(profile.strings.begin(), profile.strings.end(),
                        "pc 0x00f0: FFMA R11, R11, R0, 1"),
              profile.strings.end());
  }
  unsetenv("FAKE_NVDISASM_LOG");
  std::ifstream in(log);
  int runs = 0;
  for (std::string line; std::getline(in, line);) ++runs;
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(fs::exists(root_ / "run.cubins" /
                         (std::string(analysis::testing::kSassCubinName) + ".cubin.sass")));
  // A machine without nvdisasm (the run's folder copied to a laptop) still
  // shows the SASS from the listing kept there.
  NvdisasmSearch nowhere;
  nowhere.default_dir = "";
  ProfileSass without(nowhere);
  format::Profile profile = analysis::testing::MakeSassProfile(dir);
  EXPECT_TRUE(without.Annotate(profile, (root_ / "run.dctx").string()).empty());
  EXPECT_NE(std::find(profile.strings.begin(), profile.strings.end(),
                      "pc 0x0130: STG.E.128 desc[UR4][R4.64], R8"),
            profile.strings.end());
}

}  // namespace
}  // namespace deepcontext::sass

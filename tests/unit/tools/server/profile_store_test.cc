#include "tools/server/profile_store.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "format/dctx_file.h"
#include "tests/unit/scratch_dir.h"
#include "tests/unit/tools/analysis/stall_profile.h"
#include "tests/unit/tools/server/view_fixtures.h"
#include "tools/export/view_data.h"
#include "tools/export/view_data_binary.h"

namespace deepcontext::server {
namespace {

class ProfileStoreTest : public ::testing::Test {
protected:
  void SetUp() override { ASSERT_TRUE(testing::WriteViewFixtures(dir_).ok()); }

  ScratchDir scratch_;
  const std::string dir_ = scratch_.path();
};

// A single file takes a faster road to its tree (the tree takes the file's
// profile over); what it serves must not change.
TEST_F(ProfileStoreTest, OneFileServesWhatTheReportsTreeGives) {
  const std::string file = dir_ + "/before.dctx";
  ProfileStore store({file});
  ASSERT_EQ(store.size(), 1u);
  LoadResult loaded = store.Get(0);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  deepcontext::StatusOr<format::Profile> read = format::ReadProfileFile(file);
  ASSERT_TRUE(read.ok()) << read.status().message();
  analysis::ProfileTree tree =
      analysis::ProfileTree::FromProfile(*read, file);
  const LoadedProfile &profile = *loaded.value();
  EXPECT_EQ(profile.view_binary(), exporter::RenderViewBinary(tree));
  EXPECT_EQ(profile.view_stats_binary(), exporter::RenderViewStatsBinary(tree));
  EXPECT_EQ(profile.view_json(), exporter::RenderViewData(tree));
  EXPECT_EQ(
      profile.source_files(),
      (std::set<std::string>{dir_ + "/src/model.py", dir_ + "/src/missing.py",
                             dir_ + "/src/train.py"}));
}

// The GUI shows sampled instructions with their SASS, as the report does.
TEST_F(ProfileStoreTest, SampledInstructionsCarryTheirSass) {
  namespace fs = std::filesystem;
  const std::string fixtures = DC_SASS_FIXTURES;
  fs::create_directory(dir_ + "/sass.cubins");
  fs::copy_file(fixtures + "/scale_add.cubin",
                dir_ + "/sass.cubins/" +
                    std::string(analysis::testing::kSassCubinName) + ".cubin");
  ASSERT_TRUE(format::WriteProfileFile(
                  analysis::testing::MakeSassProfile(dir_ + "/sass.cubins"),
                  dir_ + "/sass.dctx")
                  .ok());
  setenv("DEEPCONTEXT_NVDISASM",
         (fixtures + "/fake_toolkit/bin/nvdisasm").c_str(), 1);
  ProfileStore store({dir_ + "/sass.dctx"});
  LoadResult loaded = store.Get(0);
  unsetenv("DEEPCONTEXT_NVDISASM");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const std::string &json = loaded.value()->view_json();
  EXPECT_NE(json.find("pc 0x00d0: LDG.E.128.CONSTANT R8, desc[UR4][R2.64]"),
            std::string::npos);
  EXPECT_NE(json.find("\"pc 0x0400\""), std::string::npos);
}

} // namespace
} // namespace deepcontext::server

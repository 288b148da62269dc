#include "tools/cli/install_layout.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/unit/scratch_dir.h"

namespace deepcontext::cli {
namespace {

namespace fs = std::filesystem;

// Layouts under a temporary folder, found through DEEPCONTEXT_HOME as a
// user who moves an installation sets it.
class InstallLayoutTest : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("DEEPCONTEXT_HOME"); }

  static void Touch(const fs::path& path) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << "x";
  }

  StatusOr<InstallLayout> FindAt(const fs::path& prefix) {
    setenv("DEEPCONTEXT_HOME", prefix.c_str(), 1);
    return FindInstallLayout();
  }

  ScratchDir scratch_;
  const fs::path dir_ = scratch_.path();
};

TEST_F(InstallLayoutTest, ABuildTreeHasEveryPartUnderItsPrefix) {
  Touch(dir_ / "lib" / "libdeepcontext.so");
  Touch(dir_ / "python" / "deepcontext" / "_bootstrap" / "sitecustomize.py");
  const StatusOr<InstallLayout> found = FindAt(dir_);
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(found->prefix, dir_.string());
  EXPECT_EQ(found->runtime_library, (dir_ / "lib" / "libdeepcontext.so").string());
  EXPECT_EQ(found->python_dir, (dir_ / "python").string());
  EXPECT_EQ(found->bootstrap_dir, (dir_ / "python" / "deepcontext" / "_bootstrap").string());
}

// pip puts the prefix inside the package: <site-packages>/deepcontext/_home.
TEST_F(InstallLayoutTest, APipInstallFindsThePackageAboveItsPrefix) {
  const fs::path package = dir_ / "site-packages" / "deepcontext";
  Touch(package / "_home" / "lib" / "libdeepcontext.so");
  Touch(package / "_bootstrap" / "sitecustomize.py");
  const StatusOr<InstallLayout> found = FindAt(package / "_home");
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(found->python_dir, (dir_ / "site-packages").string());
  EXPECT_EQ(found->bootstrap_dir, (package / "_bootstrap").string());
}

TEST_F(InstallLayoutTest, AMissingPartIsNamed) {
  Touch(dir_ / "python" / "deepcontext" / "_bootstrap" / "sitecustomize.py");
  StatusOr<InstallLayout> found = FindAt(dir_);
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().message(),
            "runtime library missing: " + (dir_ / "lib" / "libdeepcontext.so").string());

  Touch(dir_ / "lib" / "libdeepcontext.so");
  fs::remove_all(dir_ / "python");
  found = FindAt(dir_);
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().message(),
            "Python package missing under " + (dir_ / "python").string());
}

}  // namespace
}  // namespace deepcontext::cli

// The source view on files a profile names but that cannot be shown.
#include "tools/server/source_view.h"

#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/unit/scratch_dir.h"
#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::server {
namespace {

using analysis::testing::ProfileBuilder;
using format::FrameKind;
using nlohmann::json;

class SourceViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_ + "/big.py") << std::string(kMaxSourceBytes + 1, '#');
    std::ofstream(dir_ + "/ok.py") << "a = 1\nb = 2\n";
    ProfileBuilder b;
    format::NodeId thread = b.Add(0, FrameKind::kThread, "main");
    for (const std::string& file : {dir_, dir_ + "/big.py", dir_ + "/ok.py"}) {
      format::NodeId frame = b.Add(thread, FrameKind::kPythonFrame, "f", file, 2);
      b.Value(frame, "cpu_time", 5);
    }
    profile_ = std::make_unique<LoadedProfile>(
        analysis::ProfileTree::FromProfile(b.profile()));
  }
  json View(const std::string& file) {
    StatusOr<std::string> view = RenderSourceView(*profile_, file);
    EXPECT_TRUE(view.ok()) << file;
    return view.ok() ? json::parse(view.value()) : json();
  }

  ScratchDir scratch_;
  const std::string dir_ = scratch_.path();
  std::unique_ptr<LoadedProfile> profile_;
};

TEST_F(SourceViewTest, NamedFileWithItsLines) {
  json doc = View(dir_ + "/ok.py");
  EXPECT_EQ(doc["text"], "a = 1\nb = 2\n");
  ASSERT_EQ(doc["lines"].size(), 1u);
  EXPECT_EQ(doc["lines"][0]["line"], 2);
  EXPECT_EQ(doc["lines"][0]["exclusive"]["cpu_time"], 5);
}

TEST_F(SourceViewTest, DirectoryAndOversizedFileAreDescribedNotSent) {
  json directory = View(dir_);
  EXPECT_TRUE(directory["text"].is_null());
  EXPECT_NE(directory["error"].get<std::string>().find("not a regular file"),
            std::string::npos);
  json big = View(dir_ + "/big.py");
  EXPECT_TRUE(big["text"].is_null());
  EXPECT_NE(big["error"].get<std::string>().find("too large"), std::string::npos);
  EXPECT_EQ(big["lines"].size(), 1u);
}

TEST_F(SourceViewTest, UnnamedFileIsNotFound) {
  StatusOr<std::string> view = RenderSourceView(*profile_, dir_ + "/other.py");
  ASSERT_FALSE(view.ok());
  EXPECT_EQ(HttpStatus(view.error().code), 404);
}

}  // namespace
}  // namespace deepcontext::server

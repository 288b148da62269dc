#include "tools/report/location.h"

#include <gtest/gtest.h>

namespace deepcontext::report {
namespace {

using format::FrameKind;

TEST(LocationTest, ShortensPaths) {
  EXPECT_EQ(ShortenPath("/home/u/proj/src/model.py"), "src/model.py");
  EXPECT_EQ(ShortenPath("src/model.py"), "src/model.py");
  EXPECT_EQ(ShortenPath("train.py"), "train.py");
  EXPECT_EQ(ShortenPath("/train.py"), "/train.py");
  EXPECT_EQ(ShortenPath("<frozen importlib._bootstrap>"),
            "<frozen importlib._bootstrap>");
}

TEST(LocationTest, PackagesStartAtThePackageName) {
  EXPECT_EQ(ShortenPath("/venv/lib/python3.11/site-packages/torch/nn/"
                        "modules/conv.py"),
            "torch/nn/modules/conv.py");
  EXPECT_EQ(ShortenPath("/usr/lib/python3/dist-packages/torch/autograd/"
                        "__init__.py"),
            "torch/autograd/__init__.py");
}

TEST(LocationTest, FileAndLine) {
  EXPECT_EQ(FormatLocation({FrameKind::kPythonFrame, "f", "/a/b/c.py", 7}),
            "b/c.py:7");
  EXPECT_EQ(FormatLocation({FrameKind::kNativeFrame, "f", "/a/b/c.cc", 0}),
            "b/c.cc");
  EXPECT_EQ(FormatLocation({FrameKind::kOperator, "aten::mm", "", 0}), "");
}

}  // namespace
}  // namespace deepcontext::report

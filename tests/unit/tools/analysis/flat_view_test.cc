#include "tools/analysis/flat_view.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::analysis {
namespace {

using format::FrameKind;
using testing::kMs;
using testing::MakeTrainingProfile;
using testing::ProfileBuilder;

const FlatEntry* FindEntry(const ProfileTree& tree,
                           const std::vector<FlatEntry>& entries,
                           const std::string& name) {
  for (const FlatEntry& entry : entries) {
    if (DisplayName(tree.frames()[entry.frame]) == name) return &entry;
  }
  return nullptr;
}

TEST(FlatViewTest, RecursionIsNotCountedTwiceInInclusive) {
  // f -> g -> f -> h, plus a second, independent h under the thread.
  ProfileBuilder b;
  format::NodeId thread = b.Add(0, FrameKind::kThread, "main");
  format::NodeId f1 = b.Add(thread, FrameKind::kPythonFrame, "f", "a.py", 1);
  format::NodeId g = b.Add(f1, FrameKind::kPythonFrame, "g", "a.py", 5);
  format::NodeId f2 = b.Add(g, FrameKind::kPythonFrame, "f", "a.py", 1);
  format::NodeId h1 = b.Add(f2, FrameKind::kPythonFrame, "h", "a.py", 9);
  format::NodeId h2 = b.Add(thread, FrameKind::kPythonFrame, "h", "a.py", 9);
  b.Value(f1, "cpu_time", 1);
  b.Value(g, "cpu_time", 2);
  b.Value(f2, "cpu_time", 3);
  b.Value(h1, "cpu_time", 4);
  b.Value(h2, "cpu_time", 10);
  ProfileTree tree = ProfileTree::FromProfile(b.profile());
  MetricIndex cpu = *tree.FindMetric("cpu_time");

  std::vector<FlatEntry> entries = Flat(tree, cpu, std::nullopt);
  const FlatEntry* f = FindEntry(tree, entries, "f");
  const FlatEntry* gg = FindEntry(tree, entries, "g");
  const FlatEntry* h = FindEntry(tree, entries, "h");
  const FlatEntry* main = FindEntry(tree, entries, "thread main");
  ASSERT_TRUE(f && gg && h && main);
  EXPECT_DOUBLE_EQ(f->exclusive, 4);
  EXPECT_DOUBLE_EQ(f->inclusive, 10);  // not 10 + 7
  EXPECT_EQ(f->nodes, 2u);
  EXPECT_DOUBLE_EQ(gg->exclusive, 2);
  EXPECT_DOUBLE_EQ(gg->inclusive, 9);
  // Two unrelated occurrences do add up.
  EXPECT_DOUBLE_EQ(h->exclusive, 14);
  EXPECT_DOUBLE_EQ(h->inclusive, 14);
  EXPECT_DOUBLE_EQ(main->exclusive, 0);
  EXPECT_DOUBLE_EQ(main->inclusive, 20);

  // Sorted by exclusive value, largest first; the root is not a row.
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(DisplayName(tree.frames()[entries[0].frame]), "h");
  EXPECT_EQ(DisplayName(tree.frames()[entries[1].frame]), "f");
  EXPECT_EQ(DisplayName(tree.frames()[entries[3].frame]), "thread main");
}

TEST(FlatViewTest, SameFrameOnDifferentThreadsIsOneRow) {
  ProfileTree tree = ProfileTree::FromProfile(MakeTrainingProfile());
  MetricIndex cpu = *tree.FindMetric("cpu_time");
  std::vector<FlatEntry> entries = Flat(tree, cpu, tree.FindMetric("calls"));
  const FlatEntry* backward =
      FindEntry(tree, entries, "aten::convolution_backward");
  const FlatEntry* op = FindEntry(tree, entries, "ConvolutionBackward0");
  ASSERT_TRUE(backward && op);
  EXPECT_DOUBLE_EQ(backward->exclusive, 34 * kMs);
  EXPECT_DOUBLE_EQ(backward->calls, 12);
  EXPECT_DOUBLE_EQ(op->exclusive, 6 * kMs);
  EXPECT_DOUBLE_EQ(op->inclusive, 40 * kMs);
  EXPECT_EQ(DisplayName(tree.frames()[entries[0].frame]), "aten::convolution");
}

}  // namespace
}  // namespace deepcontext::analysis

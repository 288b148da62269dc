#include "tools/report/report.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/tools/analysis/test_profiles.h"
#include "tools/report/text_table.h"

namespace deepcontext::report {
namespace {

using analysis::ProfileTree;
using analysis::testing::kMs;
using analysis::testing::MakeTrainingProfile;
using analysis::testing::MakeTrainingProfileOf;
using analysis::testing::ProfileBuilder;
using format::FrameKind;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Returns the lines between the line starting with title and the next
// blank line.
std::vector<std::string> Section(const std::string& text,
                                 const std::string& title) {
  std::vector<std::string> section;
  bool inside = false;
  for (const std::string& line : Lines(text)) {
    if (!inside) {
      inside = line.rfind(title, 0) == 0;
      continue;
    }
    if (line.empty()) break;
    section.push_back(line);
  }
  return section;
}

// Returns the first line of lines containing needle, or "".
std::string LineWith(const std::vector<std::string>& lines,
                     const std::string& needle) {
  for (const std::string& line : lines) {
    if (line.find(needle) != std::string::npos) return line;
  }
  return "";
}

size_t CountWith(const std::vector<std::string>& lines,
                 const std::string& needle) {
  size_t count = 0;
  for (const std::string& line : lines) {
    if (line.find(needle) != std::string::npos) ++count;
  }
  return count;
}

class ReportTest : public ::testing::Test {
 protected:
  ReportTest()
      : profile_(MakeTrainingProfile()),
        tree_(ProfileTree::FromProfile(profile_, "runs/a.dctx")) {}

  std::string Render() const { return RenderReport(tree_, options_); }

  format::Profile profile_;
  ProfileTree tree_;
  ReportOptions options_;
};

TEST_F(ReportTest, HeaderDescribesTheRun) {
  std::vector<std::string> lines = Lines(Render());
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "DeepContext report");
  EXPECT_EQ(LineWith(lines, "Profile:"), "Profile:   runs/a.dctx");
  EXPECT_EQ(LineWith(lines, "Command:"),
            "Command:   python train.py --epochs 1");
  EXPECT_EQ(LineWith(lines, "Process:"),
            "Process:   pid 4242, host gpu01, rank 0");
  EXPECT_EQ(LineWith(lines, "Duration:"), "Duration:  2.00 s");
  EXPECT_EQ(LineWith(lines, "Metric:"),
            "Metric:    cpu_time (thread CPU time), total 100 ms");
}

// The first line of the profile's report that contains `label`, or "".
std::string HeaderLine(const format::Profile& profile, const std::string& label) {
  return LineWith(Lines(RenderReport(ProfileTree::FromProfile(profile), {})), label);
}

TEST(ReportHeaderTest, DeviceMemoryPeaksAndGpuWarnings) {
  format::Profile profile = MakeTrainingProfile();
  profile.metadata.emplace_back("gpu_memory", "not tracked: torch 1.13 has no CUDA");
  EXPECT_EQ(HeaderLine(profile, "Memory:"), "");  // no GPU work: nothing to say
  profile.metadata.emplace_back("gpu", "CUPTI 130001: tracing kernels");
  EXPECT_EQ(HeaderLine(profile, "Memory:"),
            "Memory:    not tracked: torch 1.13 has no CUDA");
  profile.metadata.emplace_back("gpu0_memory_peak_bytes", "20971520");
  profile.metadata.emplace_back("gpu1_memory_peak_bytes", "1024");
  EXPECT_EQ(HeaderLine(profile, "Memory:"),
            "Memory:    peak 20.0 MiB on GPU 0, 1.00 KiB on GPU 1 "
            "(--metric gpu_peak_live_bytes shows who held it)");
  profile.metadata.emplace_back("gpu0_memory_reserved_peak_bytes", "25165824");
  profile.metadata.emplace_back("gpu0_memory_before_profiling_bytes", "8388608");
  profile.metadata.emplace_back("gpu1_memory_before_profiling_bytes", "0");
  EXPECT_EQ(HeaderLine(profile, "Memory:"),
            "Memory:    peak 20.0 MiB on GPU 0 (reserved peak 24.0 MiB; 8.00 MiB "
            "allocated before profiling), 1.00 KiB on GPU 1 "
            "(--metric gpu_peak_live_bytes shows who held it)");
  EXPECT_EQ(HeaderLine(profile, "Warning:"), "");
  profile.metadata.emplace_back("gpu_warning", "3 GPU launches got no activity records");
  EXPECT_EQ(HeaderLine(profile, "Warning:"),
            "Warning:   3 GPU launches got no activity records");
}

TEST(ReportHeaderTest, GpuStatusIsShownWhenRecorded) {
  format::Profile profile = MakeTrainingProfile();
  EXPECT_EQ(HeaderLine(profile, "GPU:"), "");
  profile.metadata.emplace_back("gpu", "no GPU activity recorded (CUPTI not found)");
  EXPECT_EQ(HeaderLine(profile, "GPU:"),
            "GPU:       no GPU activity recorded (CUPTI not found)");
}

// Kernel records without a duration: expected for launches --gpu-metrics
// measured (CUPTI does not time replayed launches, the Sampled line says
// so); a warning only for those it does not explain.
TEST(ReportHeaderTest, UntimedKernelsBeyondTheMeasuredOnesAreAWarning) {
  format::Profile profile = MakeTrainingProfile();
  profile.metadata.emplace_back("gpu", "CUPTI 130001: tracing kernels");
  profile.metadata.emplace_back("gpu_untimed_kernel_records", "37");
  const std::string untimed =
      " kernel launches came without a duration from CUPTI (not timed, or still running "
      "at a flush); they are left out of gpu_time and counted in gpu_untimed_launches";
  EXPECT_EQ(HeaderLine(profile, "Warning:"), "Warning:   37" + untimed);
  profile.metadata.emplace_back("gpu_metrics", "on (auto range, kernel replay)");
  profile.metadata.emplace_back("gpu_metrics_measured", "37");
  profile.metadata.emplace_back("gpu_metrics_launches_per_kernel", "5");
  EXPECT_EQ(HeaderLine(profile, "Warning:"), "");
  EXPECT_NE(HeaderLine(profile, "Sampled:")
                .find("CUPTI gives them no time: gpu_time covers the launches not measured"),
            std::string::npos)
      << HeaderLine(profile, "Sampled:");
  for (auto& [key, value] : profile.metadata) {
    if (key == "gpu_metrics_measured") value = "30";
  }
  profile.metadata.emplace_back("gpu_warning", "2 GPU launches got no activity records");
  EXPECT_EQ(HeaderLine(profile, "Warning:"),
            "Warning:   2 GPU launches got no activity records; 7" + untimed);
}

TEST(ReportHeaderTest, TheDevicesSeenAreNamed) {
  format::Profile profile = MakeTrainingProfile();
  EXPECT_EQ(HeaderLine(profile, "Devices:"), "");
  profile.metadata.emplace_back("gpu", "CUPTI 130001: tracing kernels");
  profile.metadata.emplace_back("gpu_devices", "2x NVIDIA H200");
  EXPECT_EQ(HeaderLine(profile, "Devices:"), "Devices:   2x NVIDIA H200");
}

TEST(ReportHeaderTest, TraceWindowsSayWhatThePartOfTheRunCovers) {
  format::Profile profile = MakeTrainingProfile();
  EXPECT_EQ(HeaderLine(profile, "Traced:"), "");
  profile.metadata.emplace_back("trace_windows",
                                "9.8% of the run (0.1 asked), 212 windows of 50 ms");
  EXPECT_EQ(HeaderLine(profile, "Traced:"),
            "Traced:    9.8% of the run (0.1 asked), 212 windows of 50 ms; the "
            "metrics cover these windows only");
  // GPU tracing that ended at a window is a warning, after any other.
  profile.metadata.emplace_back("gpu_window_error", "GPU tracing ended");
  EXPECT_EQ(HeaderLine(profile, "Warning:"), "Warning:   GPU tracing ended");
  profile.metadata.emplace_back("gpu_warning", "2 GPU launches got no activity records");
  EXPECT_EQ(HeaderLine(profile, "Warning:"),
            "Warning:   2 GPU launches got no activity records; GPU tracing ended");
}

TEST_F(ReportTest, TopDownRowsCarryValuesGuidesAndLocations) {
  std::vector<std::string> table = Section(Render(), "Top-down view");
  ASSERT_GE(table.size(), 14u);  // header + 13 nodes
  EXPECT_NE(table[0].find("Inclusive"), std::string::npos);
  EXPECT_NE(table[0].find("%Total"), std::string::npos);
  EXPECT_NE(table[0].find("Calls"), std::string::npos);
  EXPECT_NE(table[1].find("thread main"), std::string::npos);

  std::string conv2d = LineWith(table, "aten::conv2d");
  EXPECT_NE(conv2d.find("54.0 ms  4.00 ms   54.0%     10"), std::string::npos)
      << conv2d;
  EXPECT_NE(conv2d.find("│  └─ aten::conv2d"), std::string::npos) << conv2d;
  std::string forward = LineWith(table, "└─ forward");
  EXPECT_NE(forward.find("mylib/model.py:10"), std::string::npos) << forward;
  EXPECT_NE(LineWith(table, "├─ [forward]"), "");
  EXPECT_NE(LineWith(table, "└─ [backward]"), "");
}

TEST_F(ReportTest, ChildrenAreSortedByInclusiveValue) {
  std::vector<std::string> table = Section(Render(), "Top-down view");
  auto position = [&table](const std::string& needle) {
    for (size_t i = 0; i < table.size(); ++i) {
      if (table[i].find(needle) != std::string::npos) return i;
    }
    return table.size();
  };
  EXPECT_LT(position("[forward]"), position("[backward]"));
  EXPECT_LT(position("thread main"), position("thread pt_autograd_0"));
  EXPECT_LT(position("[backward]"), table.size());
}

TEST_F(ReportTest, DepthLimitHidesDeeperLevels) {
  options_.depth = 2;
  options_.top = 0;
  std::string report = Render();
  std::vector<std::string> table = Section(report, "Top-down view");
  EXPECT_NE(LineWith(table, "<module>"), "");
  EXPECT_NE(LineWith(table, "ConvolutionBackward0"), "");
  EXPECT_EQ(LineWith(table, "train_step"), "");
  EXPECT_EQ(LineWith(table, "aten::convolution_backward"), "");
  EXPECT_NE(report.find("(2 nodes deeper than --depth 2 not shown)"),
            std::string::npos)
      << report;
}

TEST_F(ReportTest, MinPercentPrunesSmallSubtrees) {
  options_.min_percent = 5;
  options_.top = 0;
  std::string report = Render();
  std::vector<std::string> table = Section(report, "Top-down view");
  // The autograd thread is exactly 5% and stays; its 4 ms child goes.
  EXPECT_NE(LineWith(table, "thread pt_autograd_0"), "");
  EXPECT_EQ(CountWith(table, "aten::convolution_backward"), 1u);
  EXPECT_EQ(CountWith(table, "ConvolutionBackward0"), 2u);
  EXPECT_NE(report.find("(1 node below 5% of the total not shown"),
            std::string::npos)
      << report;

  options_.min_percent = 0;
  table = Section(Render(), "Top-down view");
  EXPECT_EQ(table.size(), 14u);
  EXPECT_EQ(CountWith(table, "aten::convolution_backward"), 2u);
}

TEST_F(ReportTest, HotspotListRanksFramesWithTheirPythonLine) {
  options_.top = 2;
  std::vector<std::string> spots =
      Section(Render(), "Top hotspots (exclusive cpu_time)");
  ASSERT_EQ(spots.size(), 3u);  // header + 2
  EXPECT_NE(spots[0].find("Mostly from"), std::string::npos);
  EXPECT_EQ(spots[1].rfind("1  50.0 ms   50.0%     10  aten::convolution", 0),
            0u)
      << spots[1];
  EXPECT_NE(spots[1].find("forward (mylib/model.py:10)"), std::string::npos);
  EXPECT_NE(spots[2].find("aten::convolution_backward"), std::string::npos);

  options_.top = 0;
  EXPECT_EQ(Render().find("Top hotspots"), std::string::npos);
}

TEST_F(ReportTest, PythonFramesWithoutCallsShowADash) {
  std::string row = LineWith(Section(Render(), "Top-down view"), "train_step");
  EXPECT_NE(row.find("94.0 ms  2.00 ms   94.0%      -  "), std::string::npos)
      << row;
}

TEST_F(ReportTest, BottomUpShowsCallersOfEachFrame) {
  options_.view = View::kBottomUp;
  options_.min_percent = 0;
  std::vector<std::string> table = Section(Render(), "Bottom-up view");
  ASSERT_GE(table.size(), 3u);
  EXPECT_EQ(table[0].find("Inclusive"), std::string::npos);
  EXPECT_NE(table[1].find("50.0 ms   50.0%     10"), std::string::npos)
      << table[1];
  EXPECT_NE(table[1].find("aten::convolution"), std::string::npos);
  EXPECT_NE(table[2].find("└─ aten::conv2d"), std::string::npos) << table[2];
  std::string autograd = LineWith(table, "thread pt_autograd_0");
  EXPECT_NE(autograd.find("4.00 ms    4.0%      2"), std::string::npos)
      << autograd;
}

TEST_F(ReportTest, FlatViewListsDistinctFrames) {
  options_.view = View::kFlat;
  std::vector<std::string> table = Section(Render(), "Flat view");
  ASSERT_GE(table.size(), 2u);
  EXPECT_NE(table[1].find("aten::convolution"), std::string::npos);
  std::string backward = LineWith(table, "aten::convolution_backward");
  EXPECT_NE(backward.find("34.0 ms   34.0%    34.0 ms   34.0%     12"),
            std::string::npos)
      << backward;
  std::string op = LineWith(table, "ConvolutionBackward0");
  EXPECT_NE(op.find("6.00 ms    6.0%    40.0 ms   40.0%     12"),
            std::string::npos)
      << op;
}

TEST_F(ReportTest, AsciiGuidesAndColor) {
  options_.unicode = false;
  options_.color = true;
  std::string report = Render();
  EXPECT_NE(report.find("`- aten::convolution"), std::string::npos);
  EXPECT_NE(report.find("|  `- aten::conv2d"), std::string::npos);
  EXPECT_EQ(report.find("└"), std::string::npos);
  EXPECT_NE(report.find("\x1b[1mTop-down view"), std::string::npos);
}

TEST_F(ReportTest, WidthLimitTruncatesNames) {
  options_.width = 80;
  options_.top = 0;
  std::vector<std::string> table = Section(Render(), "Top-down view");
  for (const std::string& line : table) {
    EXPECT_LE(DisplayWidth(line), 80u) << line;
  }
  EXPECT_NE(LineWith(table, "..."), "");
}

TEST_F(ReportTest, UnknownMetricIsNamed) {
  options_.metric = "gpu_time";
  std::string report = Render();
  EXPECT_NE(report.find("Unknown metric 'gpu_time'; available metrics: "
                        "calls, cpu_time."),
            std::string::npos)
      << report;
  EXPECT_EQ(report.find("Top-down view"), std::string::npos);
}

TEST_F(ReportTest, SelectingAnotherMetric) {
  options_.metric = "calls";
  std::string report = Render();
  EXPECT_NE(report.find("Metric:    calls (number of calls), total 44"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("Top hotspots (exclusive calls)"), std::string::npos);
}

TEST(ReportMessagesTest, MetricWithoutValuesIsSaidClearly) {
  ProfileBuilder b;
  b.Metric("gpu_time", "ns");
  b.Metric("cpu_time", "ns");
  format::NodeId op = b.Add(0, FrameKind::kOperator, "aten::add");
  b.Value(op, "cpu_time", 5);
  ProfileTree tree = ProfileTree::FromProfile(b.profile());
  ReportOptions options;
  options.metric = "gpu_time";
  std::string report = RenderReport(tree, options);
  // The report falls back to the metric that has values, and says so.
  EXPECT_NE(report.find("Note:      no gpu_time values in this profile (no "
                        "GPU work was recorded); showing cpu_time\n"
                        "Metric:    cpu_time"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("Top-down view (inclusive cpu_time)"),
            std::string::npos);

  // Without --metric the default falls back to cpu_time, which has values.
  options.metric.clear();
  EXPECT_NE(RenderReport(tree, options).find("Top-down view"),
            std::string::npos);
}

TEST(ReportMessagesTest, ProfileWithoutValuesSaysWhyInOneLine) {
  ProfileBuilder b;
  b.Metric("cpu_time", "ns");
  b.Metric("wall_time", "ns");
  b.Add(0, FrameKind::kThread, "main");
  ProfileTree tree = ProfileTree::FromProfile(b.profile());
  std::string report = RenderReport(tree, ReportOptions{});
  EXPECT_NE(report.find("\nNo samples in this profile: no operator, GPU work "
                        "or CPU time was recorded"),
            std::string::npos)
      << report;
  EXPECT_EQ(report.find("Top-down view"), std::string::npos);
}

TEST(ReportMessagesTest, ProfileWithoutMetrics) {
  format::Profile empty;
  ProfileTree tree = ProfileTree::FromProfile(empty, "e.dctx");
  std::string report = RenderReport(tree, ReportOptions{});
  EXPECT_NE(report.find("The profile contains no metrics."), std::string::npos)
      << report;
}

TEST(ReportUnitsTest, BytesMetricIsFormattedInBinaryUnits) {
  ProfileBuilder b;
  b.Metric("alloc_bytes", "bytes", "bytes allocated");
  format::NodeId thread = b.Add(0, FrameKind::kThread, "main");
  format::NodeId op = b.Add(thread, FrameKind::kOperator, "aten::empty");
  b.Value(op, "alloc_bytes", 3.0 * 1024 * 1024, 3);
  b.Value(thread, "alloc_bytes", 1024, 1);
  ProfileTree tree = ProfileTree::FromProfile(b.profile());
  std::string report = RenderReport(tree, ReportOptions{});
  std::vector<std::string> table = Section(report, "Top-down view");
  EXPECT_NE(LineWith(table, "thread main").find("3.00 MiB  1.00 KiB"),
            std::string::npos)
      << report;
  EXPECT_NE(LineWith(table, "aten::empty").find("3.00 MiB  3.00 MiB"),
            std::string::npos)
      << report;
  // No "calls" metric, so no Calls column.
  EXPECT_EQ(report.find("Calls"), std::string::npos);
}

TEST(ReportMultiProfileTest, ProcessesAreShownSideBySide) {
  format::Profile rank0 = MakeTrainingProfile();
  format::Profile rank1 = MakeTrainingProfileOf("4243", "1");
  ProfileTree tree =
      ProfileTree::FromProfiles({{&rank0, "r0.dctx"}, {&rank1, "r1.dctx"}});
  ReportOptions options;
  options.depth = 1;
  std::string report = RenderReport(tree, options);
  std::vector<std::string> lines = Lines(report);
  EXPECT_EQ(LineWith(lines, "Profiles:"), "Profiles:  2");
  EXPECT_EQ(LineWith(lines, "r1.dctx:"),
            "  r1.dctx: pid 4243, host gpu01, rank 1, 2.00 s");
  EXPECT_EQ(LineWith(lines, "Command:"),
            "Command:   python train.py --epochs 1");
  EXPECT_NE(report.find("total 200 ms"), std::string::npos);
  std::vector<std::string> table = Section(report, "Top-down view");
  // Header, two process rows, the note about deeper levels.
  ASSERT_EQ(table.size(), 4u) << report;
  EXPECT_NE(table[1].find("50.0%      -  process 4242 rank 0 (r0.dctx)"),
            std::string::npos)
      << table[1];
  EXPECT_NE(table[2].find("50.0%      -  process 4243 rank 1 (r1.dctx)"),
            std::string::npos)
      << table[2];
  EXPECT_EQ(table[3], "(4 nodes deeper than --depth 1 not shown)");
}

TEST(ReportMultiProfileTest, EveryWarningEntryIsAHeaderLineOnce) {
  format::Profile rank0 = MakeTrainingProfile();
  format::Profile rank1 = MakeTrainingProfileOf("4243", "1");
  const std::string adapter = "PyTorch adapter not built: no operators";
  rank0.metadata.emplace_back("warning_torch_adapter", adapter);
  rank1.metadata.emplace_back("warning_torch_adapter", adapter);
  rank1.metadata.emplace_back("warning_disk", "profile written late");
  rank1.metadata.emplace_back("not_a_warning_x", "ignored");
  ProfileTree tree =
      ProfileTree::FromProfiles({{&rank0, "r0.dctx"}, {&rank1, "r1.dctx"}});
  std::vector<std::string> lines = Lines(RenderReport(tree, ReportOptions{}));
  std::vector<std::string> warnings;
  for (const std::string& line : lines) {
    if (line.rfind("Warning:", 0) == 0) warnings.push_back(line);
  }
  EXPECT_EQ(warnings,
            (std::vector<std::string>{"Warning:   " + adapter,
                                      "Warning:   profile written late"}));

  // One profile: its warning under its header.
  ProfileTree single = ProfileTree::FromProfile(rank0, "r0.dctx");
  EXPECT_EQ(LineWith(Lines(RenderReport(single, ReportOptions{})), "Warning:"),
            "Warning:   " + adapter);
}

TEST(ReportMultiProfileTest, EachProcessSaysWhatItsTraceWindowsCovered) {
  format::Profile rank0 = MakeTrainingProfile();
  format::Profile rank1 = MakeTrainingProfileOf("4243", "1");
  rank1.metadata.emplace_back("trace_windows",
                              "10.2% of the run (0.1 asked), 40 windows of 50 ms");
  ProfileTree tree =
      ProfileTree::FromProfiles({{&rank0, "r0.dctx"}, {&rank1, "r1.dctx"}});
  std::vector<std::string> lines = Lines(RenderReport(tree, ReportOptions{}));
  EXPECT_EQ(LineWith(lines, "r0.dctx:"),
            "  r0.dctx: pid 4242, host gpu01, rank 0, 2.00 s");
  EXPECT_EQ(LineWith(lines, "r1.dctx:"),
            "  r1.dctx: pid 4243, host gpu01, rank 1, 2.00 s, 10.2% of the run "
            "(0.1 asked), 40 windows of 50 ms");
}

TEST(ReportDeepTreeTest, IndentationStopsGrowingOnDeepChains) {
  ProfileBuilder b;
  format::NodeId node = b.Add(0, FrameKind::kThread, "main");
  for (int i = 2; i <= 40; ++i) {
    std::string name = "level";
    name += std::to_string(i);
    node = b.Add(node, FrameKind::kPythonFrame, name, "deep.py",
                 static_cast<uint32_t>(i));
  }
  b.Value(node, "cpu_time", 1);
  ProfileTree tree = ProfileTree::FromProfile(b.profile());
  std::vector<std::string> table =
      Section(RenderReport(tree, ReportOptions{}), "Top-down view");
  ASSERT_EQ(table.size(), 41u);  // header + 40 levels
  std::string level24 = LineWith(table, "level24 ");
  std::string level25 = LineWith(table, "level25 ");
  std::string level40 = LineWith(table, "level40 ");
  EXPECT_EQ(level24.find("["), std::string::npos) << level24;
  EXPECT_NE(level25.find("[25] └─ level25"), std::string::npos) << level25;
  EXPECT_NE(level40.find("[40] └─ level40"), std::string::npos) << level40;
  // Same indentation from level 25 on.
  EXPECT_EQ(level25.find("[25]"), level40.find("[40]"));
}

TEST(ReportViewTest, ParseAndName) {
  EXPECT_EQ(ParseView("top-down"), View::kTopDown);
  EXPECT_EQ(ParseView("bottom-up"), View::kBottomUp);
  EXPECT_EQ(ParseView("flat"), View::kFlat);
  EXPECT_FALSE(ParseView("sideways").has_value());
  EXPECT_STREQ(ViewName(View::kBottomUp), "bottom-up");
}

}  // namespace
}  // namespace deepcontext::report

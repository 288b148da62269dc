// A whole session through the public C APIs: start, emit ops, write, read back.
#include "deepcontext/dlmonitor.h"
#include "deepcontext/profiler.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "format/dctx_file.h"
#include "tests/unit/runtime/emit_op.h"

namespace {

using deepcontext::testing::EmitOp;

TEST(Session, WritesAReadableProfileWithOnlyMeasuredContexts) {
  ASSERT_EQ(deepcontext_start(), 0) << deepcontext_last_error();
  EXPECT_EQ(deepcontext_start(), -1);  // one session at a time
  EXPECT_NE(std::string(deepcontext_last_error()).find("already active"),
            std::string::npos);
  ASSERT_EQ(deepcontext_set_metadata("torch_version", "9.9"), 0);
  for (uint64_t i = 0; i < 5; ++i) {
    EmitOp("outer", 2 * i + 1, DLMONITOR_PHASE_ENTER);
    EmitOp("inner", 2 * i + 2, DLMONITOR_PHASE_ENTER);
    EmitOp("inner", 2 * i + 2, DLMONITOR_PHASE_EXIT);
    EmitOp("outer", 2 * i + 1, DLMONITOR_PHASE_EXIT);
  }
  // A context that never gets samples must not be written.
  dlmonitor_frame_t unused{sizeof(dlmonitor_frame_t), DLMONITOR_FRAME_GPU_KERNEL,
                           "never_measured", "", 0};
  dlmonitor_context_t ignored = 0;
  dlmonitor_context_child(1, &unused, &ignored);

  const std::string path =
      ::testing::TempDir() + "/session_" + std::to_string(getpid()) + ".dctx";
  ASSERT_EQ(deepcontext_write(path.c_str()), 0) << deepcontext_last_error();
  ASSERT_EQ(deepcontext_stop(), 0);
  EXPECT_EQ(deepcontext_is_active(), 0);

  auto read = deepcontext::format::ReadProfileFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  const auto& profile = *read;
  EXPECT_EQ(profile.Metadata("torch_version"), "9.9");
  EXPECT_EQ(profile.Metadata("pid"), std::to_string(getpid()));
  EXPECT_FALSE(profile.Metadata("start_time_ns").empty());
  // root, thread, outer, inner
  ASSERT_EQ(profile.nodes.size(), 4u);
  EXPECT_EQ(profile.strings[profile.nodes[2].name], "outer");
  EXPECT_EQ(profile.nodes[3].parent, 2u);
  int calls_metric = -1;
  for (size_t i = 0; i < profile.metrics.size(); ++i) {
    if (profile.metrics[i].name == "calls") calls_metric = static_cast<int>(i);
  }
  ASSERT_GE(calls_metric, 0);
  for (const auto& value : profile.values) {
    if (static_cast<int>(value.metric) == calls_metric) {
      EXPECT_EQ(value.sum, 5);
    }
  }
  unlink(path.c_str());
}

TEST(Session, GpuStatusIsRecordedAndCanBeTurnedOff) {
  setenv("DEEPCONTEXT_GPU", "0", 1);
  ASSERT_EQ(deepcontext_start(), 0) << deepcontext_last_error();
  unsetenv("DEEPCONTEXT_GPU");
  const std::string status = deepcontext_gpu_status();
  EXPECT_EQ(status,
            "no GPU activity recorded: GPU profiling turned off "
            "(DEEPCONTEXT_GPU=0)");
  const std::string path =
      ::testing::TempDir() + "/gpu_status_" + std::to_string(getpid()) + ".dctx";
  ASSERT_EQ(deepcontext_write(path.c_str()), 0) << deepcontext_last_error();
  ASSERT_EQ(deepcontext_stop(), 0);
  auto read = deepcontext::format::ReadProfileFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->Metadata("gpu"), status);
  unlink(path.c_str());
}

// The op switch's calls, in order (a C function pointer cannot capture).
std::vector<int> g_op_switch_calls;
std::mutex g_op_switch_mutex;
int RecordOpSwitch(int on) {
  std::lock_guard<std::mutex> guard(g_op_switch_mutex);
  g_op_switch_calls.push_back(on);
  return 0;
}

TEST(Session, TraceWindowsTurnTheOpSwitchAndAreDescribed) {
  EXPECT_EQ(deepcontext_set_trace_windows(0, 50000), -1);
  EXPECT_NE(std::string(deepcontext_last_error()).find("between 0.001 and 1"),
            std::string::npos);
  EXPECT_EQ(deepcontext_set_trace_windows(0.5, 100), -1);  // 0.1 ms
  ASSERT_EQ(deepcontext_set_trace_windows(0.5, 2000), 0) << deepcontext_last_error();
  ASSERT_EQ(deepcontext_set_op_switch(&RecordOpSwitch), 0);
  setenv("DEEPCONTEXT_GPU", "0", 1);
  ASSERT_EQ(deepcontext_start(), 0) << deepcontext_last_error();
  unsetenv("DEEPCONTEXT_GPU");
  // Later sessions trace everything; this one keeps its windows.
  ASSERT_EQ(deepcontext_set_trace_windows(1, 50000), 0);
  // Tracing follows the windows: seen both on and off within 100 ms.
  bool seen[2] = {false, false};
  for (int i = 0; i < 1000; ++i) {
    seen[deepcontext_is_tracing()] = true;
    usleep(100);
  }
  EXPECT_TRUE(seen[0] && seen[1]);
  const std::string path =
      ::testing::TempDir() + "/windows_" + std::to_string(getpid()) + ".dctx";
  ASSERT_EQ(deepcontext_write(path.c_str()), 0) << deepcontext_last_error();
  ASSERT_EQ(deepcontext_stop(), 0);
  ASSERT_EQ(deepcontext_set_op_switch(nullptr), 0);
  {
    std::lock_guard<std::mutex> guard(g_op_switch_mutex);
    ASSERT_GE(g_op_switch_calls.size(), 10u);
    for (size_t i = 1; i < g_op_switch_calls.size(); ++i) {
      ASSERT_NE(g_op_switch_calls[i], g_op_switch_calls[i - 1]);
    }
    EXPECT_EQ(g_op_switch_calls.back(), 1) << "ops are on again after the session";
  }
  auto read = deepcontext::format::ReadProfileFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  const auto& profile = *read;
  EXPECT_EQ(profile.Metadata("trace_fraction"), "0.5");
  EXPECT_EQ(profile.Metadata("trace_window_ns"), "2000000");
  EXPECT_NE(profile.Metadata("trace_windows").find("(0.5 asked), "), std::string::npos)
      << profile.Metadata("trace_windows");
  const double traced = std::stod(profile.Metadata("traced_ns"));
  const double duration = std::stod(profile.Metadata("duration_ns"));
  EXPECT_GT(traced, 0.1 * duration);
  EXPECT_LT(traced, 0.9 * duration);
  unlink(path.c_str());

  EXPECT_EQ(deepcontext_is_tracing(), 0) << "no session, nothing traced";

  // The next session traces everything and says nothing of windows.
  ASSERT_EQ(deepcontext_start(), 0) << deepcontext_last_error();
  EXPECT_EQ(deepcontext_is_tracing(), 1);
  ASSERT_EQ(deepcontext_write(path.c_str()), 0) << deepcontext_last_error();
  ASSERT_EQ(deepcontext_stop(), 0);
  read = deepcontext::format::ReadProfileFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->Metadata("trace_windows"), "");
  unlink(path.c_str());
}

TEST(Session, WriteErrorsAreReported) {
  EXPECT_EQ(deepcontext_write("/nonexistent-dir/x.dctx"), -1);
  EXPECT_NE(std::string(deepcontext_last_error()).find("/nonexistent-dir/x.dctx"),
            std::string::npos);
  EXPECT_EQ(deepcontext_write(nullptr), -1);
  EXPECT_EQ(deepcontext_stop(), -1);  // not active
}

}  // namespace

namespace {

using deepcontext::testing::EmitMemory;

TEST(Session, AllocatorEventsAreChargedToTheAllocatingOp) {
  ASSERT_EQ(deepcontext_start(), 0) << deepcontext_last_error();
  EmitOp("alloc_op", 901, DLMONITOR_PHASE_ENTER);
  EmitMemory(0, 0xA000, 4096);
  EmitMemory(0, 0xB000, 1024);
  EmitOp("alloc_op", 901, DLMONITOR_PHASE_EXIT);
  EmitOp("free_op", 902, DLMONITOR_PHASE_ENTER);
  EmitMemory(0, 0xB000, -1024);  // freed in another op: still alloc_op's
  EmitOp("free_op", 902, DLMONITOR_PHASE_EXIT);

  const std::string path =
      ::testing::TempDir() + "/memory_" + std::to_string(getpid()) + ".dctx";
  ASSERT_EQ(deepcontext_write(path.c_str()), 0) << deepcontext_last_error();
  ASSERT_EQ(deepcontext_stop(), 0);
  auto read = deepcontext::format::ReadProfileFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  const auto& profile = *read;
  EXPECT_EQ(profile.Metadata("gpu0_memory_peak_bytes"), "5120");
  EXPECT_EQ(profile.Metadata("gpu0_memory_live_bytes"), "4096");
  std::map<std::string, std::map<std::string, double>> by_metric_and_node;
  for (const auto& value : profile.values) {
    by_metric_and_node[profile.metrics[value.metric].name]
                      [profile.strings[profile.nodes[value.node].name]] =
                          value.sum;
  }
  EXPECT_EQ(by_metric_and_node["gpu_alloc_bytes"]["alloc_op"], 5120);
  EXPECT_EQ(by_metric_and_node["gpu_peak_live_bytes"]["alloc_op"], 5120);
  EXPECT_EQ(by_metric_and_node["gpu_alloc_bytes"].count("free_op"), 0u);
  unlink(path.c_str());
}

}  // namespace

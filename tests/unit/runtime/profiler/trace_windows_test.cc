#include "runtime/profiler/trace_windows.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/unit/runtime/thread_names.h"

namespace deepcontext::profiler {
namespace {

TraceWindowOptions Options(double fraction, int64_t window_ms) {
  TraceWindowOptions options;
  options.fraction = fraction;
  options.window_ns = window_ms * 1000000;
  return options;
}

// What the windows asked the switch to do, in order.
class SwitchLog {
 public:
  TraceWindows::Switch Switch() {
    return [this](bool on) {
      std::lock_guard<std::mutex> guard(mutex_);
      calls_.push_back(on);
    };
  }
  std::vector<bool> calls() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return calls_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<bool> calls_;
};

TEST(TraceWindowOptions, RangesAreChecked) {
  EXPECT_TRUE(CheckTraceWindowOptions(Options(0.1, 50)).ok());
  EXPECT_TRUE(CheckTraceWindowOptions(Options(1.0, 1)).ok());
  EXPECT_NE(CheckTraceWindowOptions(Options(0.0, 50)).message().find("between 0.001 and 1"),
            std::string::npos);
  EXPECT_FALSE(CheckTraceWindowOptions(Options(1.5, 50)).ok());
  EXPECT_FALSE(CheckTraceWindowOptions(Options(-0.2, 50)).ok());
  TraceWindowOptions nan = Options(0.5, 50);
  nan.fraction = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(CheckTraceWindowOptions(nan).ok());
  EXPECT_NE(CheckTraceWindowOptions(Options(0.5, 0)).message().find("from 1 ms to 60000 ms"),
            std::string::npos);
  EXPECT_FALSE(CheckTraceWindowOptions(Options(0.5, 60001)).ok());
}

TEST(PauseSchedule, PausesAverageWhatMakesWindowsCoverTheFraction) {
  // Windows of 10 ms covering a quarter of the time: pauses of 30 ms on
  // average, each between 15 and 45 ms.
  PauseSchedule schedule(Options(0.25, 10), /*seed=*/7);
  EXPECT_EQ(schedule.mean_pause_ns(), 30000000);
  EXPECT_EQ(PauseSchedule::MeanPauseNs(Options(0.25, 10)), 30000000);
  EXPECT_EQ(PauseSchedule::ShortestPauseNs(Options(0.25, 10)), 15000000);
  double sum = 0;
  constexpr int kDraws = 10000;
  for (int i = 0; i < kDraws; ++i) {
    const int64_t pause = schedule.NextPauseNs();
    ASSERT_GE(pause, PauseSchedule::ShortestPauseNs(Options(0.25, 10)));
    ASSERT_LE(pause, 45000000);
    sum += static_cast<double>(pause);
  }
  EXPECT_NEAR(sum / kDraws, 30000000, 600000);
  // Random, but the same for the same seed.
  PauseSchedule again(Options(0.25, 10), 7);
  PauseSchedule other(Options(0.25, 10), 8);
  EXPECT_EQ(PauseSchedule(Options(0.25, 10), 7).NextPauseNs(), again.NextPauseNs());
  EXPECT_NE(PauseSchedule(Options(0.25, 10), 7).NextPauseNs(), other.NextPauseNs());
  EXPECT_EQ(PauseSchedule(Options(1.0, 10), 7).NextPauseNs(), 0);
}

TEST(TraceWindows, TheirThreadIsNamedWhileTheyRun) {
  SwitchLog log;
  TraceWindows windows;
  ASSERT_TRUE(windows.Start(Options(0.5, 5), log.Switch(), /*seed=*/3).ok());
  EXPECT_TRUE(testing::WaitForThreadNamed("dc-trace-window"));
  windows.Stop();
  EXPECT_TRUE(testing::WaitForNoThreadNamed("dc-trace-window"));
}

TEST(TraceWindows, AlternateAndCoverAboutTheFraction) {
  SwitchLog log;
  TraceWindows windows;
  ASSERT_TRUE(windows.Start(Options(0.5, 5), log.Switch(), /*seed=*/3).ok());
  EXPECT_TRUE(windows.running());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  windows.Stop();
  EXPECT_FALSE(windows.running());
  const std::vector<bool> calls = log.calls();
  ASSERT_GE(calls.size(), 20u);
  for (size_t i = 1; i < calls.size(); ++i) {
    ASSERT_NE(calls[i], calls[i - 1]) << "switch " << i << " repeats a state";
  }
  EXPECT_TRUE(calls.back()) << "Stop() leaves tracing on";
  const TraceWindows::Stats stats = windows.stats();
  EXPECT_GE(stats.windows, 10u);
  EXPECT_GE(stats.elapsed_ns, 400000000);
  // Wide bounds: a loaded machine wakes the thread late.
  const double share = static_cast<double>(stats.traced_ns) /
                       static_cast<double>(stats.elapsed_ns);
  EXPECT_GT(share, 0.2);
  EXPECT_LT(share, 0.8);
  // Stopped: the numbers no longer move.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(windows.stats().elapsed_ns, stats.elapsed_ns);
  EXPECT_EQ(windows.stats().traced_ns, stats.traced_ns);
}

TEST(TraceWindows, AStopInsideAPauseTurnsTracingBackOn) {
  // A 0.1 % fraction starts inside a pause of about a second for all but
  // one seed in a thousand; the seed here does.
  SwitchLog log;
  TraceWindows windows;
  ASSERT_TRUE(windows.Start(Options(0.001, 1), log.Switch(), /*seed=*/11).ok());
  ASSERT_EQ(log.calls(), std::vector<bool>{false}) << "starts paused";
  EXPECT_EQ(windows.stats().windows, 0u);
  EXPECT_EQ(windows.stats().traced_ns, 0);
  windows.Stop();  // wakes the thread at once, not after the pause
  EXPECT_EQ(log.calls(), (std::vector<bool>{false, true}));
  EXPECT_EQ(windows.stats().traced_ns, 0);
}

TEST(TraceWindows, ResetStatsCountsFromNow) {
  SwitchLog log;
  TraceWindows windows;
  ASSERT_TRUE(windows.Start(Options(0.5, 2), log.Switch(), /*seed=*/5).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  const TraceWindows::Stats before = windows.stats();
  windows.ResetStats();
  const TraceWindows::Stats after = windows.stats();
  EXPECT_LT(after.elapsed_ns, before.elapsed_ns);
  EXPECT_LE(after.windows, 1u);
  EXPECT_LE(after.traced_ns, after.elapsed_ns);
  windows.Stop();
}

TEST(TraceWindows, StartTwiceIsRefusedAndStopTwiceIsHarmless) {
  SwitchLog log;
  TraceWindows windows;
  ASSERT_TRUE(windows.Start(Options(0.5, 5), log.Switch(), 1).ok());
  EXPECT_EQ(windows.Start(Options(0.5, 5), log.Switch(), 1).message(),
            "trace windows are already running");
  windows.Stop();
  const size_t calls = log.calls().size();
  windows.Stop();
  EXPECT_EQ(log.calls().size(), calls);
}

}  // namespace
}  // namespace deepcontext::profiler

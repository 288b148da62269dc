#include "runtime/gpu/window_detach.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>
#include <vector>

namespace deepcontext::gpu {
namespace {

using State = WindowDetach::State;
using Resumed = WindowDetach::Resumed;
using std::chrono::milliseconds;

std::map<std::string, std::string> AsMap(
    const std::vector<std::pair<std::string, std::string>>& entries) {
  return {entries.begin(), entries.end()};
}

TEST(WindowDetach, OnlyAnAskedPauseDetaches) {
  WindowDetach detach;
  int finalized = 0;
  auto finalize = [&finalized] { ++finalized; };
  EXPECT_TRUE(detach.tracing());
  EXPECT_FALSE(detach.OnApiExit(finalize));
  // Preparing the detach: callbacks trace nothing, and do not detach yet.
  detach.Quiet();
  EXPECT_FALSE(detach.tracing());
  EXPECT_FALSE(detach.OnApiExit(finalize));
  EXPECT_EQ(finalized, 0);
  detach.Ask();
  EXPECT_FALSE(detach.tracing());
  EXPECT_TRUE(detach.OnApiExit(finalize));
  EXPECT_FALSE(detach.OnApiExit(finalize));
  EXPECT_EQ(finalized, 1);
  EXPECT_EQ(detach.state(), State::kDetached);
  EXPECT_EQ(detach.EndPause(milliseconds(10)), Resumed::kDetached);
  EXPECT_FALSE(detach.tracing());
  detach.Attached();
  EXPECT_TRUE(detach.tracing());
  EXPECT_EQ(detach.stats().detaches, 1u);
  EXPECT_EQ(detach.stats().called_off, 0u);
}

TEST(WindowDetach, ManyThreadsAtTheirCallsExitDetachOnce) {
  WindowDetach detach;
  detach.Quiet();
  detach.Ask();
  std::atomic<int> finalized{0};
  std::atomic<int> detached_here{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      while (!go.load()) {
      }
      for (int call = 0; call < 1000; ++call) {
        if (detach.OnApiExit([&] { finalized.fetch_add(1); })) {
          detached_here.fetch_add(1);
        }
      }
    });
  }
  go.store(true);
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(finalized.load(), 1);
  EXPECT_EQ(detached_here.load(), 1);
  EXPECT_EQ(detach.stats().detaches, 1u);
}

TEST(WindowDetach, APauseWithoutCallsCallsTheDetachOff) {
  WindowDetach detach;
  detach.Quiet();
  detach.Ask();
  EXPECT_EQ(detach.EndPause(milliseconds(10)), Resumed::kStillAttached);
  // Re-enabling tracing is under way: a late call neither traces nor
  // detaches.
  EXPECT_EQ(detach.state(), State::kQuiet);
  EXPECT_FALSE(detach.OnApiExit([] { FAIL() << "detached after the pause"; }));
  detach.Attached();
  EXPECT_TRUE(detach.tracing());
  EXPECT_EQ(detach.stats().called_off, 1u);
  EXPECT_EQ(detach.stats().detaches, 0u);
  // A pause that never asked (CUPTI stayed attached) resumes the same way.
  EXPECT_EQ(detach.EndPause(milliseconds(10)), Resumed::kStillAttached);
  EXPECT_EQ(detach.stats().called_off, 1u);
}

TEST(WindowDetach, TheEndOfAPauseWaitsForADetachUnderWay) {
  WindowDetach detach;
  detach.Quiet();
  detach.Ask();
  std::atomic<bool> inside{false};
  std::atomic<bool> release{false};
  std::thread application([&] {
    detach.OnApiExit([&] {
      inside.store(true);
      while (!release.load()) std::this_thread::sleep_for(milliseconds(1));
    });
  });
  while (!inside.load()) std::this_thread::yield();
  EXPECT_EQ(detach.state(), State::kDetaching);
  // Too short a wait: the pause cannot end safely.
  EXPECT_EQ(detach.EndPause(milliseconds(20)), Resumed::kStuck);
  std::thread releaser([&] {
    std::this_thread::sleep_for(milliseconds(30));
    release.store(true);
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(detach.EndPause(std::chrono::seconds(10)), Resumed::kDetached);
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(10));
  application.join();
  releaser.join();
  EXPECT_EQ(detach.state(), State::kDetached);
  EXPECT_GE(detach.stats().detach_max_ns, 20'000'000);
}

TEST(WindowDetach, MetadataSaysHowOftenAndHowLong) {
  WindowDetach detach;
  for (int i = 0; i < 2; ++i) {
    detach.Quiet();
    detach.Ask();
    ASSERT_TRUE(detach.OnApiExit([] {}));
    ASSERT_EQ(detach.EndPause(milliseconds(10)), Resumed::kDetached);
    detach.RecordAttach(i == 0 ? 1'000'000 : 3'000'000);
    detach.Attached();
  }
  detach.Quiet();
  detach.Ask();
  ASSERT_EQ(detach.EndPause(milliseconds(10)), Resumed::kStillAttached);
  auto metadata = AsMap(WindowDetachMetadata(detach.stats(), ""));
  EXPECT_EQ(metadata["gpu_window_detaches"], "2");
  EXPECT_EQ(metadata["gpu_window_attach_mean_us"], "2000");
  EXPECT_EQ(metadata["gpu_window_attach_max_us"], "3000");
  EXPECT_EQ(metadata["gpu_window_detach_called_off"], "1");
  EXPECT_EQ(metadata.count("gpu_window_detach_max_us"), 1u);
  EXPECT_EQ(metadata.count("gpu_window_error"), 0u);
  metadata = AsMap(WindowDetachMetadata(WindowDetach::Stats{}, "GPU tracing ended"));
  EXPECT_EQ(metadata["gpu_window_detaches"], "0");
  EXPECT_EQ(metadata.count("gpu_window_attach_mean_us"), 0u);
  EXPECT_EQ(metadata["gpu_window_error"], "GPU tracing ended");
}

}  // namespace
}  // namespace deepcontext::gpu

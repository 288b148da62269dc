#include "runtime/gpu/buffer_worker.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace deepcontext::gpu {
namespace {

CompletedBuffer Buffer(size_t tag) {
  CompletedBuffer buffer;
  buffer.stream_id = static_cast<uint32_t>(tag);
  buffer.valid_size = tag;
  return buffer;
}

TEST(BufferWorkerTest, HandlesBuffersOnItsOwnThreadInOrder) {
  std::mutex mutex;
  std::vector<size_t> seen;
  std::vector<std::thread::id> threads;
  BufferWorker worker([&](const CompletedBuffer& buffer) {
    std::lock_guard<std::mutex> guard(mutex);
    seen.push_back(buffer.valid_size);
    threads.push_back(std::this_thread::get_id());
  });
  for (size_t i = 0; i < 100; ++i) ASSERT_TRUE(worker.Submit(Buffer(i)));
  worker.Drain();
  ASSERT_EQ(seen.size(), 100u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i);
  for (const auto& id : threads) EXPECT_NE(id, std::this_thread::get_id());
  EXPECT_EQ(worker.handled(), 100u);
}

TEST(BufferWorkerTest, ItsThreadIsNamed) {
  char name[32] = {};
  BufferWorker worker([&](const CompletedBuffer&) {
    pthread_getname_np(pthread_self(), name, sizeof(name));
  });
  ASSERT_TRUE(worker.Submit(Buffer(1)));
  worker.Drain();
  EXPECT_STREQ(name, "dc-gpu-records");
}

TEST(BufferWorkerTest, SubmitReturnsBeforeTheBufferIsHandled) {
  std::atomic<bool> release{false};
  std::atomic<int> handled{0};
  BufferWorker worker([&](const CompletedBuffer&) {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    handled.fetch_add(1);
  });
  ASSERT_TRUE(worker.Submit(Buffer(1)));
  ASSERT_TRUE(worker.Submit(Buffer(2)));
  EXPECT_EQ(handled.load(), 0);  // the submitting thread never waits
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    release.store(true);
  });
  worker.Drain();  // waits for the slow handler
  EXPECT_EQ(handled.load(), 2);
  releaser.join();
}

TEST(BufferWorkerTest, DrainCoversEverySubmittingThread) {
  std::atomic<uint64_t> sum{0};
  BufferWorker worker([&](const CompletedBuffer& buffer) {
    sum.fetch_add(buffer.valid_size);
  });
  std::vector<std::thread> submitters;
  for (int t = 0; t < 8; ++t) {
    submitters.emplace_back([&] {
      for (size_t i = 1; i <= 500; ++i) EXPECT_TRUE(worker.Submit(Buffer(i)));
    });
  }
  for (auto& thread : submitters) thread.join();
  worker.Drain();
  EXPECT_EQ(sum.load(), 8u * 500u * 501u / 2u);
  EXPECT_EQ(worker.handled(), 4000u);
}

TEST(BufferWorkerTest, DrainWithoutBuffersReturnsAtOnce) {
  BufferWorker worker([](const CompletedBuffer&) {});
  worker.Drain();
  EXPECT_EQ(worker.handled(), 0u);
}

TEST(BufferWorkerTest, DestructorHandlesWhatIsStillQueued) {
  std::atomic<int> handled{0};
  {
    BufferWorker worker([&](const CompletedBuffer&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      handled.fetch_add(1);
    });
    for (size_t i = 0; i < 10; ++i) ASSERT_TRUE(worker.Submit(Buffer(i)));
  }
  EXPECT_EQ(handled.load(), 10);
}

TEST(BufferWorkerTest, AThrowingHandlerLosesOneBufferNotTheThread) {
  std::atomic<int> handled{0};
  BufferWorker worker([&](const CompletedBuffer& buffer) {
    if (buffer.valid_size == 1) throw std::runtime_error("out of memory");
    handled.fetch_add(1);
  });
  ASSERT_TRUE(worker.Submit(Buffer(1)));
  ASSERT_TRUE(worker.Submit(Buffer(2)));
  worker.Drain();
  EXPECT_EQ(handled.load(), 1);
  EXPECT_EQ(worker.handled(), 2u);
}

TEST(BufferWorkerTest, AForkedChildHandlesBuffersItself) {
  BufferWorker worker([](const CompletedBuffer&) {});
  ASSERT_TRUE(worker.Submit(Buffer(1)));  // the parent's thread runs
  worker.Drain();
  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    // The child has no worker thread: Submit must refuse (the caller then
    // handles the buffer) and Drain must not wait for one.
    const bool refused = !worker.Submit(Buffer(2));
    worker.Drain();
    _exit(refused ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace deepcontext::gpu

#include "runtime/cupti/activity_processor.h"

#include <gtest/gtest.h>

#include <cupti.h>

#include <cstring>
#include <new>
#include <vector>

#include "runtime/cupti/cupti_functions.h"
#include "runtime/cupti/cupti_loader.h"
#include "tests/unit/runtime/gpu/fake_context_sink.h"

namespace deepcontext::cupti {
namespace {

constexpr gpu::ContextId kLaunchContext = 10;

template <typename T>
T Zeroed() {
  T value;
  std::memset(static_cast<void*>(&value), 0, sizeof(value));
  return value;
}

// An activity buffer laid out like CUPTI's: records back to back, each
// starting on an 8-byte boundary.
class HandBuffer {
 public:
  HandBuffer() : storage_(1 << 13) {}
  template <typename T>
  void Append(const T& record) {
    const size_t offset = size_;
    size_ += (sizeof(T) + 7) / 8 * 8;
    ASSERT_LE(size_, storage_.size() * sizeof(uint64_t));
    std::memcpy(data() + offset, &record, sizeof(T));
    offsets_.push_back(offset);
  }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(storage_.data()); }
  size_t size() const { return size_; }

  // A NextActivityFn over the recorded offsets; `user` is the HandBuffer.
  static bool Next(void* user, uint8_t* buffer, size_t valid_size,
                   const void** record) {
    auto* self = static_cast<HandBuffer*>(user);
    size_t index = 0;
    if (*record != nullptr) {
      const size_t current = static_cast<const uint8_t*>(*record) - buffer;
      while (index < self->offsets_.size() && self->offsets_[index] <= current) {
        ++index;
      }
    }
    if (index >= self->offsets_.size() || self->offsets_[index] >= valid_size) {
      return false;
    }
    *record = buffer + self->offsets_[index];
    return true;
  }

 private:
  std::vector<uint64_t> storage_;  // uint64_t for alignment
  std::vector<size_t> offsets_;
  size_t size_ = 0;
};

CUpti_ActivityKernel10 Kernel(uint32_t correlation, uint32_t device, const char* name,
                              uint64_t start, uint64_t end) {
  auto k = Zeroed<CUpti_ActivityKernel10>();
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.correlationId = correlation;
  k.deviceId = device;
  k.name = name;
  k.start = start;
  k.end = end;
  k.gridX = 132;
  k.gridY = k.gridZ = 1;
  k.blockX = 256;
  k.blockY = k.blockZ = 1;
  k.registersPerThread = 64;
  return k;
}

gpu::LaunchRecord Launch(uint64_t correlation, std::string_view api) {
  gpu::LaunchRecord launch;
  launch.correlation_id = correlation;
  launch.context = kLaunchContext;
  launch.api_name = api;
  return launch;
}

class ActivityProcessorTest : public ::testing::Test {
 protected:
  ActivityProcessorTest()
      : attribution_(sink_),
        processor_(attribution_, [this](uint32_t device, gpu::DeviceInfo* info) {
          ++queries_;
          if (device != 0) return false;  // only device 0 is described
          *info = gpu::DeviceInfoForArch(9, 0, 132);
          return true;
        }) {}

  // One of each record type, launched from kLaunchContext.
  void FillMixedBuffer() {
    for (uint64_t id = 1; id <= 5; ++id) {
      attribution_.OnLaunch(Launch(id, id <= 2 ? "cuLaunchKernel" : "cuMemcpyAsync"));
    }
    buffer_.Append(Kernel(1, 0, "gemm", 100, 400));
    buffer_.Append(Kernel(2, 0, "gemm", 500, 600));
    auto copy = Zeroed<CUpti_ActivityMemcpy6>();
    copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    copy.correlationId = 3;
    copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    copy.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    copy.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    copy.bytes = 4096;
    copy.start = 700;
    copy.end = 750;
    buffer_.Append(copy);
    auto set = Zeroed<CUpti_ActivityMemset4>();
    set.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    set.correlationId = 4;
    set.bytes = 512;
    set.start = 800;
    set.end = 810;
    buffer_.Append(set);
    // A kind the parser does not convert: skipped, counted.
    auto api = Zeroed<CUpti_ActivityAPI>();
    api.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    api.correlationId = 99;
    buffer_.Append(api);
    auto sync = Zeroed<CUpti_ActivitySynchronization2>();
    sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    sync.correlationId = 5;
    sync.start = 900;
    sync.end = 1900;
    buffer_.Append(sync);
  }

  void ExpectMixedBufferCredited() {
    EXPECT_EQ(sink_.Sum(kLaunchContext, {"cuLaunchKernel", "gemm"}, gpu::GpuMetric::kGpuTime),
              400);
    EXPECT_EQ(sink_.Count(kLaunchContext, {"cuLaunchKernel", "gemm"},
                          gpu::GpuMetric::kGpuTime),
              2u);
    EXPECT_EQ(sink_.Sum(kLaunchContext, {"cuMemcpyAsync", "memcpy HtoD (pinned)"},
                        gpu::GpuMetric::kBytes),
              4096);
    EXPECT_EQ(sink_.Sum(kLaunchContext, {"cuMemcpyAsync", "memset"}, gpu::GpuMetric::kBytes),
              512);
    EXPECT_EQ(sink_.Sum(kLaunchContext, {"cuMemcpyAsync", "sync: stream"},
                        gpu::GpuMetric::kSyncTime),
              1000);
    // Occupancy needs the device limits, which were asked for once.
    EXPECT_EQ(sink_.Count(kLaunchContext, {"cuLaunchKernel", "gemm"},
                          gpu::GpuMetric::kOccupancy),
              2u);
    EXPECT_EQ(queries_, 1);
    const ActivityCounters counters = processor_.Counters();
    EXPECT_EQ(counters.buffers, 1u);
    EXPECT_EQ(counters.records, 6u);
    EXPECT_EQ(counters.kernels, 2u);
    EXPECT_EQ(counters.memcpys, 1u);
    EXPECT_EQ(counters.memsets, 1u);
    EXPECT_EQ(counters.syncs, 1u);
    EXPECT_EQ(counters.unsupported, 1u);
    EXPECT_EQ(counters.failed, 0u);
    EXPECT_EQ(attribution_.Stats().tracked, 0u);
  }

  gpu::FakeContextSink sink_;
  gpu::GpuAttribution attribution_;
  int queries_ = 0;
  ActivityProcessor processor_;
  HandBuffer buffer_;
};

TEST_F(ActivityProcessorTest, CreditsEveryRecordOfABuffer) {
  FillMixedBuffer();
  EXPECT_EQ(processor_.ProcessBuffer(buffer_.data(), buffer_.size(), &HandBuffer::Next,
                                     &buffer_),
            6u);
  ExpectMixedBufferCredited();
  const auto devices = processor_.Devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices.at(0).sm_count, 132);
}

// The walker the backend uses on completed buffers, on a hand-made buffer.
TEST_F(ActivityProcessorTest, CuptiWalkerReadsTheSameBuffer) {
  const CuptiLibrary& library = CuptiLibrary::Get();
  if (!library.available()) GTEST_SKIP() << library.status().message();
  FillMixedBuffer();
  auto* functions = const_cast<CuptiFunctions*>(library.functions());
  EXPECT_EQ(processor_.ProcessBuffer(buffer_.data(), buffer_.size(), &NextCuptiRecord,
                                     functions),
            6u);
  ExpectMixedBufferCredited();
}

TEST_F(ActivityProcessorTest, OnlyValidBytesAreRead) {
  FillMixedBuffer();
  // The first two kernels only.
  const size_t two_kernels = 2 * ((sizeof(CUpti_ActivityKernel10) + 7) / 8 * 8);
  EXPECT_EQ(processor_.ProcessBuffer(buffer_.data(), two_kernels, &HandBuffer::Next,
                                     &buffer_),
            2u);
  EXPECT_EQ(processor_.Counters().kernels, 2u);
  EXPECT_EQ(processor_.ProcessBuffer(buffer_.data(), 0, &HandBuffer::Next, &buffer_),
            0u);
  EXPECT_EQ(processor_.ProcessBuffer(nullptr, 100, &HandBuffer::Next, &buffer_), 0u);
}

TEST_F(ActivityProcessorTest, UndescribedDevicesAreAskedABoundedNumberOfTimes) {
  for (uint32_t id = 1; id <= 10; ++id) {
    attribution_.OnLaunch(Launch(id, "cuLaunchKernel"));
    buffer_.Append(Kernel(id, /*device=*/3, "k", id * 10, id * 10 + 5));
  }
  processor_.ProcessBuffer(buffer_.data(), buffer_.size(), &HandBuffer::Next, &buffer_);
  EXPECT_EQ(queries_, 3);
  EXPECT_EQ(sink_.Count(kLaunchContext, {"cuLaunchKernel", "k"}, gpu::GpuMetric::kGpuTime),
            10u);
  EXPECT_EQ(sink_.Count(kLaunchContext, {"cuLaunchKernel", "k"}, gpu::GpuMetric::kOccupancy),
            0u);
  EXPECT_TRUE(processor_.Devices().empty());
}

TEST_F(ActivityProcessorTest, RecordsBeforeTheirLaunchWaitForIt) {
  buffer_.Append(Kernel(77, 0, "early", 0, 9));
  processor_.ProcessBuffer(buffer_.data(), buffer_.size(), &HandBuffer::Next, &buffer_);
  EXPECT_EQ(attribution_.Stats().parked, 1u);
  attribution_.OnLaunch(Launch(77, "cuLaunchKernel"));
  attribution_.Flush();
  EXPECT_EQ(sink_.Sum(kLaunchContext, {"cuLaunchKernel", "early"}, gpu::GpuMetric::kGpuTime),
            9);
}

// Walks a HandBuffer, then fails like an allocation inside CUPTI would.
struct FailingWalk {
  HandBuffer* buffer;
  int records_before_failure;
  static bool Next(void* user, uint8_t* data, size_t valid_size,
                   const void** record) {
    auto* self = static_cast<FailingWalk*>(user);
    if (self->records_before_failure-- == 0) throw std::bad_alloc();
    return HandBuffer::Next(self->buffer, data, valid_size, record);
  }
};

// The completion callback runs on CUPTI's thread: nothing may escape, and
// what was credited before the failure stays.
TEST_F(ActivityProcessorTest, FailuresAbandonTheBufferWithoutThrowing) {
  for (uint32_t id = 1; id <= 3; ++id) {
    attribution_.OnLaunch(Launch(id, "cuLaunchKernel"));
    buffer_.Append(Kernel(id, 0, "k", 0, 1));
  }
  FailingWalk walk{&buffer_, 1};
  EXPECT_EQ(processor_.ProcessBuffer(buffer_.data(), buffer_.size(), &FailingWalk::Next,
                                     &walk),
            1u);
  EXPECT_EQ(processor_.Counters().failed, 1u);
  EXPECT_EQ(processor_.Counters().buffers, 1u);
  EXPECT_EQ(sink_.Count(kLaunchContext, {"cuLaunchKernel", "k"}, gpu::GpuMetric::kGpuTime),
            1u);
}

}  // namespace
}  // namespace deepcontext::cupti

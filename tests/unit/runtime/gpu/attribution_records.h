// Records as CUPTI's activity and callback layers hand them to
// GpuAttribution and its correlation table, with the fields the tests do not
// vary filled in, and the attribution tests' fixture.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "runtime/gpu/gpu_records.h"
#include "tests/unit/runtime/gpu/fake_context_sink.h"

namespace deepcontext::gpu::test_records {

// The context the attribution options name as the root in these tests.
inline constexpr ContextId kRoot = 1;

inline LaunchRecord Launch(uint64_t correlation, ContextId context,
                           std::string_view api = "cuLaunchKernel",
                           uint32_t expected = 1) {
  LaunchRecord launch;
  launch.correlation_id = correlation;
  launch.context = context;
  launch.api_name = api;
  launch.thread = 42;
  launch.expected_records = expected;
  return launch;
}

inline KernelRecord Kernel(uint64_t correlation, std::string name, uint64_t start,
                           uint64_t end, uint32_t device = 0, uint32_t stream = 7) {
  KernelRecord kernel;
  kernel.correlation_id = correlation;
  kernel.name = std::move(name);
  kernel.start_ns = start;
  kernel.end_ns = end;
  kernel.device = device;
  kernel.stream = stream;
  kernel.grid_x = 4;
  kernel.grid_y = 2;
  kernel.grid_z = 1;
  kernel.block_x = 128;
  kernel.block_y = 1;
  kernel.block_z = 1;
  kernel.registers_per_thread = 32;
  kernel.static_shared_bytes = 1024;
  kernel.dynamic_shared_bytes = 2048;
  return kernel;
}

inline MemcpyRecord Copy(uint64_t correlation, CopyKind kind, MemoryKind src,
                         MemoryKind dst, uint64_t bytes, uint64_t start, uint64_t end) {
  MemcpyRecord copy;
  copy.correlation_id = correlation;
  copy.kind = kind;
  copy.src_kind = src;
  copy.dst_kind = dst;
  copy.bytes = bytes;
  copy.start_ns = start;
  copy.end_ns = end;
  return copy;
}

inline SyncRecord Sync(uint64_t correlation, SyncKind kind, uint64_t start, uint64_t end) {
  SyncRecord sync;
  sync.correlation_id = correlation;
  sync.kind = kind;
  sync.start_ns = start;
  sync.end_ns = end;
  return sync;
}

// One fixture for the attribution tests of every file: a suite's tests must
// share their fixture class.
class GpuAttributionTest : public ::testing::Test {
 protected:
  FakeContextSink sink_;
};

}  // namespace deepcontext::gpu::test_records

#include "runtime/cupti/activity_parser.h"

#include <gtest/gtest.h>

#include <cupti.h>

#include <cstring>

namespace deepcontext::cupti {
namespace {

// Records are built by hand, field by field, as CUPTI would fill them.
template <typename T>
T Zeroed() {
  T value;
  std::memset(static_cast<void*>(&value), 0, sizeof(value));
  return value;
}

TEST(ActivityParserTest, Kernel) {
  auto in = Zeroed<CUpti_ActivityKernel10>();
  in.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  in.correlationId = 1234;
  in.deviceId = 1;
  in.contextId = 2;
  in.streamId = 13;
  in.graphId = 5;
  in.graphNodeId = 0x1234567890ull;
  in.start = 1000;
  in.end = 4500;
  in.name = "_Z4gemmPfS_";
  in.gridX = 80;
  in.gridY = 2;
  in.gridZ = 1;
  in.blockX = 256;
  in.blockY = 1;
  in.blockZ = 1;
  in.registersPerThread = 72;
  in.staticSharedMemory = 4096;
  in.dynamicSharedMemory = 16384;
  in.sharedMemoryExecuted = 100 * 1024;

  ParsedActivity out;
  ASSERT_EQ(ParseActivity(&in, &out), ActivityType::kKernel);
  const gpu::KernelRecord& k = out.kernel;
  EXPECT_EQ(k.correlation_id, 1234u);
  EXPECT_EQ(k.device, 1u);
  EXPECT_EQ(k.context_id, 2u);
  EXPECT_EQ(k.stream, 13u);
  EXPECT_EQ(k.graph_id, 5u);
  EXPECT_EQ(k.graph_node_id, 0x1234567890ull);
  EXPECT_EQ(k.start_ns, 1000u);
  EXPECT_EQ(k.end_ns, 4500u);
  EXPECT_EQ(k.name, "_Z4gemmPfS_");
  EXPECT_EQ(k.grid_x, 80);
  EXPECT_EQ(k.grid_y, 2);
  EXPECT_EQ(k.block_x, 256);
  EXPECT_EQ(k.registers_per_thread, 72u);
  EXPECT_EQ(k.static_shared_bytes, 4096u);
  EXPECT_EQ(k.dynamic_shared_bytes, 16384u);
  EXPECT_EQ(k.shared_carveout_bytes, 100u * 1024);

  in.kind = CUPTI_ACTIVITY_KIND_KERNEL;
  in.name = nullptr;
  ASSERT_EQ(ParseActivity(&in, &out), ActivityType::kKernel);
  EXPECT_EQ(out.kernel.name, "<unknown kernel>");
}

TEST(ActivityParserTest, Memcpy) {
  auto in = Zeroed<CUpti_ActivityMemcpy6>();
  in.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  in.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  in.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  in.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  in.bytes = 1 << 20;
  in.start = 10;
  in.end = 90;
  in.deviceId = 3;
  in.streamId = 7;
  in.correlationId = 55;
  in.graphNodeId = 9;
  ParsedActivity out;
  ASSERT_EQ(ParseActivity(&in, &out), ActivityType::kMemcpy);
  EXPECT_EQ(out.memcpy.correlation_id, 55u);
  EXPECT_EQ(out.memcpy.kind, gpu::CopyKind::kHostToDevice);
  EXPECT_EQ(out.memcpy.src_kind, gpu::MemoryKind::kPageable);
  EXPECT_EQ(out.memcpy.dst_kind, gpu::MemoryKind::kDevice);
  EXPECT_EQ(out.memcpy.bytes, 1u << 20);
  EXPECT_EQ(out.memcpy.device, 3u);
  EXPECT_EQ(out.memcpy.stream, 7u);
  EXPECT_EQ(out.memcpy.graph_node_id, 9u);
  EXPECT_EQ(out.memcpy.end_ns - out.memcpy.start_ns, 80u);

  in.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_ATOH;
  in.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_ARRAY;
  in.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  ASSERT_EQ(ParseActivity(&in, &out), ActivityType::kMemcpy);
  EXPECT_EQ(out.memcpy.kind, gpu::CopyKind::kDeviceToHost);
  EXPECT_EQ(out.memcpy.src_kind, gpu::MemoryKind::kArray);
  EXPECT_EQ(out.memcpy.dst_kind, gpu::MemoryKind::kPinned);
}

TEST(ActivityParserTest, PeerToPeerMemcpy) {
  auto in = Zeroed<CUpti_ActivityMemcpyPtoP4>();
  in.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  in.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  in.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  in.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  in.bytes = 4096;
  in.correlationId = 77;
  in.deviceId = 1;
  ParsedActivity out;
  ASSERT_EQ(ParseActivity(&in, &out), ActivityType::kMemcpy);
  EXPECT_EQ(out.memcpy.kind, gpu::CopyKind::kPeerToPeer);
  EXPECT_EQ(out.memcpy.correlation_id, 77u);
  EXPECT_EQ(out.memcpy.bytes, 4096u);
}

TEST(ActivityParserTest, Memset) {
  auto in = Zeroed<CUpti_ActivityMemset4>();
  in.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  in.bytes = 512;
  in.start = 5;
  in.end = 8;
  in.correlationId = 66;
  in.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
  ParsedActivity out;
  ASSERT_EQ(ParseActivity(&in, &out), ActivityType::kMemset);
  EXPECT_EQ(out.memset.correlation_id, 66u);
  EXPECT_EQ(out.memset.bytes, 512u);
  EXPECT_EQ(out.memset.memory_kind, gpu::MemoryKind::kManaged);
}

TEST(ActivityParserTest, Synchronization) {
  auto in = Zeroed<CUpti_ActivitySynchronization2>();
  in.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  in.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  in.start = 100;
  in.end = 900;
  in.correlationId = 88;
  in.streamId = 4;
  ParsedActivity out;
  ASSERT_EQ(ParseActivity(&in, &out), ActivityType::kSync);
  EXPECT_EQ(out.sync.kind, gpu::SyncKind::kStream);
  EXPECT_EQ(out.sync.correlation_id, 88u);
  EXPECT_EQ(out.sync.stream, 4u);
  EXPECT_EQ(out.sync.end_ns - out.sync.start_ns, 800u);

  in.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  ASSERT_EQ(ParseActivity(&in, &out), ActivityType::kSync);
  EXPECT_EQ(out.sync.kind, gpu::SyncKind::kContext);
}

TEST(ActivityParserTest, OtherKindsAreUnsupported) {
  auto in = Zeroed<CUpti_ActivityMemset4>();
  in.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  ParsedActivity out;
  EXPECT_EQ(ParseActivity(&in, &out), ActivityType::kUnsupported);
  EXPECT_EQ(ParseActivity(nullptr, &out), ActivityType::kUnsupported);
}

}  // namespace
}  // namespace deepcontext::cupti

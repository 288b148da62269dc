#include "runtime/gpu/occupancy.h"

#include <gtest/gtest.h>

#if defined(DEEPCONTEXT_TEST_WITH_CUDA_OCCUPANCY)
#include <cuda_occupancy.h>
#endif

namespace deepcontext::gpu {
namespace {

// H100 / H200 (sm_90): 132 SMs, 2048 threads, 32 blocks, 64 K registers and
// 228 KB shared memory (227 KB per block, 1 KB reserved per block) per SM.
DeviceInfo H200() { return DeviceInfoForArch(9, 0, 132); }

Occupancy Compute(int threads, int regs, int64_t shared = 0) {
  LaunchShape shape;
  shape.threads_per_block = threads;
  shape.regs_per_thread = regs;
  shape.shared_bytes_per_block = shared;
  return ComputeOccupancy(H200(), shape);
}

TEST(OccupancyTest, H200Limits) {
  const DeviceInfo info = H200();
  EXPECT_TRUE(info.Valid());
  EXPECT_EQ(info.sm_count, 132);
  EXPECT_EQ(info.max_threads_per_sm, 2048);
  EXPECT_EQ(info.regs_per_sm, 65536);
  EXPECT_EQ(info.shared_per_sm, 228 * 1024);
  EXPECT_EQ(info.max_blocks_per_sm, 32);
  EXPECT_FALSE(DeviceInfoForArch(4, 0, 1).Valid());
}

TEST(OccupancyTest, FullOccupancyLimitedByWarps) {
  const Occupancy o = Compute(256, 32);
  EXPECT_EQ(o.blocks_per_sm, 8);
  EXPECT_EQ(o.warps_per_sm, 64);
  EXPECT_DOUBLE_EQ(o.fraction, 1.0);
  EXPECT_EQ(o.limiter, OccupancyLimiter::kWarps);
}

TEST(OccupancyTest, RegisterLimited) {
  Occupancy o = Compute(256, 64);  // 2048 regs per warp: 8 warps per scheduler
  EXPECT_EQ(o.blocks_per_sm, 4);
  EXPECT_DOUBLE_EQ(o.fraction, 0.5);
  EXPECT_EQ(o.limiter, OccupancyLimiter::kRegisters);

  o = Compute(128, 255);  // rounded to 8192 per warp: 2 warps per scheduler
  EXPECT_EQ(o.blocks_per_sm, 2);
  EXPECT_DOUBLE_EQ(o.fraction, 0.125);

  o = Compute(96, 128);  // 3-warp blocks: 16 warps fit, 5 whole blocks
  EXPECT_EQ(o.blocks_per_sm, 5);
  EXPECT_EQ(o.warps_per_sm, 15);
  EXPECT_DOUBLE_EQ(o.fraction, 15.0 / 64.0);
}

TEST(OccupancyTest, SharedMemoryLimited) {
  // 48 KB + 1 KB reserved per block: 4 blocks fit in 228 KB.
  const Occupancy o = Compute(128, 32, 48 * 1024);
  EXPECT_EQ(o.blocks_per_sm, 4);
  EXPECT_DOUBLE_EQ(o.fraction, 0.25);
  EXPECT_EQ(o.limiter, OccupancyLimiter::kSharedMemory);

  // A smaller carveout (as reported by the kernel record) fits fewer.
  LaunchShape shape;
  shape.threads_per_block = 128;
  shape.regs_per_thread = 32;
  shape.shared_bytes_per_block = 48 * 1024;
  shape.shared_carveout_bytes = 100 * 1024;
  EXPECT_EQ(ComputeOccupancy(H200(), shape).blocks_per_sm, 2);
}

TEST(OccupancyTest, BlockLimited) {
  const Occupancy o = Compute(32, 16);
  EXPECT_EQ(o.blocks_per_sm, 32);
  EXPECT_DOUBLE_EQ(o.fraction, 0.5);
  EXPECT_EQ(o.limiter, OccupancyLimiter::kBlocks);
}

TEST(OccupancyTest, ImpossibleLaunches) {
  EXPECT_EQ(Compute(1025, 32).blocks_per_sm, 0);
  EXPECT_EQ(Compute(0, 32).blocks_per_sm, 0);
  EXPECT_EQ(Compute(256, 32, 228 * 1024).blocks_per_sm, 0);  // > 227 KB
  EXPECT_EQ(Compute(1024, 128).blocks_per_sm, 0);  // 128 K registers per block
  EXPECT_EQ(Compute(32, 300).blocks_per_sm, 0);
  EXPECT_EQ(ComputeOccupancy(DeviceInfo{}, LaunchShape{256, 32, 0, 0}).blocks_per_sm, 0);
  EXPECT_EQ(Compute(1025, 32).limiter, OccupancyLimiter::kNone);
}

#if defined(DEEPCONTEXT_TEST_WITH_CUDA_OCCUPANCY)
// Cross-checks against the toolkit's reference occupancy calculator over a
// grid of launch shapes, for the architectures DeviceInfoForArch knows.
TEST(OccupancyTest, AgreesWithToolkitCalculator) {
  const int archs[][2] = {{7, 0}, {8, 0}, {8, 6}, {8, 9}, {9, 0}};
  const int block_sizes[] = {1, 32, 33, 64, 96, 100, 128, 192, 256, 384, 512, 640, 768, 1024};
  const int regs[] = {0, 16, 24, 32, 40, 48, 64, 72, 96, 128, 168, 200, 255};
  const int64_t shared[] = {0, 1, 1000, 4096, 8 * 1024, 20000, 48 * 1024,
                            64 * 1024, 100 * 1024, 160 * 1024, 227 * 1024};
  int compared = 0;
  for (const auto& arch : archs) {
    const DeviceInfo info = DeviceInfoForArch(arch[0], arch[1], 100);
    cudaOccDeviceProp props;
    props.computeMajor = info.compute_major;
    props.computeMinor = info.compute_minor;
    props.maxThreadsPerBlock = info.max_threads_per_block;
    props.maxThreadsPerMultiprocessor = info.max_threads_per_sm;
    props.regsPerBlock = info.max_regs_per_block;
    props.regsPerMultiprocessor = info.regs_per_sm;
    props.warpSize = info.warp_size;
    props.sharedMemPerBlock = 48 * 1024;
    props.sharedMemPerMultiprocessor = static_cast<size_t>(info.shared_per_sm);
    props.numSms = info.sm_count;
    props.sharedMemPerBlockOptin = static_cast<size_t>(info.shared_per_block_optin);
    props.reservedSharedMemPerBlock =
        static_cast<size_t>(info.reserved_shared_per_block);
    for (int threads : block_sizes) {
      for (int reg : regs) {
        for (int64_t smem : shared) {
          cudaOccFuncAttributes attributes;
          attributes.maxThreadsPerBlock = 1024;
          attributes.numRegs = reg;
          attributes.sharedSizeBytes = 0;
          attributes.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
          attributes.maxDynamicSharedSizeBytes =
              static_cast<size_t>(info.shared_per_block_optin);
          attributes.numBlockBarriers = 1;
          cudaOccDeviceState state;
          cudaOccResult expected{};
          const cudaOccError error = cudaOccMaxActiveBlocksPerMultiprocessor(
              &expected, &props, &attributes, &state, threads,
              static_cast<size_t>(smem));
          LaunchShape shape;
          shape.threads_per_block = threads;
          shape.regs_per_thread = reg;
          shape.shared_bytes_per_block = smem;
          const Occupancy ours = ComputeOccupancy(info, shape);
          const int want = error == CUDA_OCC_SUCCESS ? expected.activeBlocksPerMultiprocessor : 0;
          EXPECT_EQ(ours.blocks_per_sm, want)
              << "sm_" << arch[0] << arch[1] << " threads=" << threads
              << " regs=" << reg << " shared=" << smem;
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 1000);
}
#endif

}  // namespace
}  // namespace deepcontext::gpu

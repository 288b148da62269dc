#include "runtime/gpu/occupancy.h"

#include <algorithm>
#include <climits>

namespace deepcontext::gpu {
namespace {

int64_t DivideRoundUp(int64_t x, int64_t y) { return (x + y - 1) / y; }
int64_t RoundUp(int64_t x, int64_t y) { return DivideRoundUp(x, y) * y; }

// Blocks per SM allowed by the register file. Each warp's registers are
// rounded up to the allocation unit and must fit in one scheduler's share
// of the file, so the count is computed per sub-partition.
int64_t RegisterLimit(const DeviceInfo& device, int64_t warps_per_block,
                      int regs_per_thread) {
  if (regs_per_thread <= 0) return INT_MAX;
  if (regs_per_thread > device.max_regs_per_thread) return 0;
  const int64_t regs_per_warp =
      RoundUp(int64_t{regs_per_thread} * device.warp_size, device.reg_alloc_unit);
  // A block's warps are spread over all schedulers, so a block is charged
  // as if its warp count were rounded up to the number of schedulers.
  const int64_t regs_per_block =
      regs_per_warp * RoundUp(warps_per_block, device.sub_partitions);
  if (regs_per_block > device.max_regs_per_block) return 0;
  const int64_t warps_per_partition =
      (device.regs_per_sm / device.sub_partitions) / regs_per_warp;
  return warps_per_partition * device.sub_partitions / warps_per_block;
}

int64_t SharedMemoryLimit(const DeviceInfo& device, const LaunchShape& shape) {
  const int64_t total =
      shape.shared_bytes_per_block + device.reserved_shared_per_block;
  const int64_t allocated = RoundUp(total, device.shared_alloc_unit);
  if (allocated >
      device.shared_per_block_optin + device.reserved_shared_per_block) {
    return 0;
  }
  if (shape.shared_bytes_per_block == 0 && device.reserved_shared_per_block == 0) {
    return INT_MAX;
  }
  int64_t per_sm = shape.shared_carveout_bytes > 0 ? shape.shared_carveout_bytes
                                                   : device.shared_per_sm;
  // The driver grows the carveout when one block needs more than it.
  per_sm = std::min(std::max(per_sm, allocated), device.shared_per_sm);
  return allocated > 0 ? per_sm / allocated : INT_MAX;
}

}  // namespace

bool DeviceInfo::Valid() const {
  return warp_size > 0 && max_threads_per_sm >= warp_size &&
         max_blocks_per_sm > 0 && regs_per_sm > 0 && max_regs_per_block > 0 &&
         reg_alloc_unit > 0 && sub_partitions > 0 && shared_per_sm > 0 &&
         shared_alloc_unit > 0 && max_threads_per_block > 0;
}

DeviceInfo DeviceInfoForArch(int major, int minor, int sm_count) {
  DeviceInfo info;
  info.compute_major = major;
  info.compute_minor = minor;
  info.sm_count = sm_count;
  info.regs_per_sm = 65536;
  info.max_regs_per_block = 65536;
  const int kib = 1024;
  switch (major * 10 + minor) {
    case 70:  // V100
      info.max_threads_per_sm = 2048;
      info.max_blocks_per_sm = 32;
      info.shared_per_sm = 96 * kib;
      info.shared_per_block_optin = 96 * kib;
      info.shared_alloc_unit = 256;
      break;
    case 75:  // Turing
      info.max_threads_per_sm = 1024;
      info.max_blocks_per_sm = 16;
      info.shared_per_sm = 64 * kib;
      info.shared_per_block_optin = 64 * kib;
      info.shared_alloc_unit = 256;
      break;
    case 80:  // A100
      info.max_threads_per_sm = 2048;
      info.max_blocks_per_sm = 32;
      info.shared_per_sm = 164 * kib;
      info.shared_per_block_optin = 163 * kib;
      info.reserved_shared_per_block = kib;
      break;
    case 86:
    case 89:
      info.max_threads_per_sm = 1536;
      info.max_blocks_per_sm = major * 10 + minor == 89 ? 24 : 16;
      info.shared_per_sm = 100 * kib;
      info.shared_per_block_optin = 99 * kib;
      info.reserved_shared_per_block = kib;
      break;
    case 90:  // H100 / H200
      info.max_threads_per_sm = 2048;
      info.max_blocks_per_sm = 32;
      info.shared_per_sm = 228 * kib;
      info.shared_per_block_optin = 227 * kib;
      info.reserved_shared_per_block = kib;
      break;
    default:
      info.max_threads_per_sm = 0;  // unknown: Valid() is false
      break;
  }
  info.name = "sm_" + std::to_string(major) + std::to_string(minor);
  return info;
}

Occupancy ComputeOccupancy(const DeviceInfo& device, const LaunchShape& shape) {
  Occupancy result;
  if (!device.Valid() || shape.threads_per_block <= 0 ||
      shape.threads_per_block > device.max_threads_per_block) {
    return result;
  }
  const int64_t max_warps = device.max_threads_per_sm / device.warp_size;
  const int64_t warps_per_block =
      DivideRoundUp(shape.threads_per_block, device.warp_size);

  struct Candidate {
    int64_t blocks;
    OccupancyLimiter limiter;
  };
  // Ties go to the earlier entry: warps and blocks are the limits a user
  // cannot trade against, so naming them is the more useful advice.
  const Candidate candidates[] = {
      {max_warps / warps_per_block, OccupancyLimiter::kWarps},
      {device.max_blocks_per_sm, OccupancyLimiter::kBlocks},
      {RegisterLimit(device, warps_per_block, shape.regs_per_thread),
       OccupancyLimiter::kRegisters},
      {SharedMemoryLimit(device, shape), OccupancyLimiter::kSharedMemory},
  };
  Candidate best = candidates[0];
  for (const Candidate& candidate : candidates) {
    if (candidate.blocks < best.blocks) best = candidate;
  }
  if (best.blocks <= 0) return result;
  result.blocks_per_sm = static_cast<int>(best.blocks);
  result.warps_per_sm = static_cast<int>(best.blocks * warps_per_block);
  result.fraction = static_cast<double>(result.warps_per_sm) /
                    static_cast<double>(max_warps);
  result.limiter = best.limiter;
  return result;
}

}  // namespace deepcontext::gpu

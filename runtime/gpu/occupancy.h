// Theoretical occupancy of a kernel launch: how many of an SM's warp slots
// the launch can fill at once, given its block size, registers and shared
// memory. Computed offline from the kernel record and the device's limits,
// so it costs nothing at launch time.
#pragma once

#include <cstdint>
#include <string>

namespace deepcontext::gpu {

// The per-device limits occupancy depends on. The production backend fills
// it from driver attributes; DeviceInfoForArch() gives the published
// values of an architecture.
struct DeviceInfo {
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  int sm_count = 0;
  int warp_size = 32;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;
  int regs_per_sm = 0;
  int max_regs_per_block = 0;
  int max_regs_per_thread = 255;
  // Registers are allocated per warp in units of this many.
  int reg_alloc_unit = 256;
  // The register file is split evenly between this many warp schedulers; a
  // warp's registers must fit in one of them.
  int sub_partitions = 4;
  int64_t shared_per_sm = 0;             // largest carveout, bytes
  int64_t shared_per_block_optin = 0;    // largest per block, bytes
  int64_t reserved_shared_per_block = 0;  // taken by the driver per block
  int shared_alloc_unit = 128;
  // The device's memory, for the profile's metadata (not occupancy); 0 when
  // unknown.
  int64_t total_memory_bytes = 0;

  // True when the limits needed for occupancy are present.
  bool Valid() const;
};

// Published limits for an architecture (7.0 .. 9.0); sm_count as given.
// Unknown architectures return an info with Valid() == false.
DeviceInfo DeviceInfoForArch(int major, int minor, int sm_count);

// The resources one block of a launch needs.
struct LaunchShape {
  int threads_per_block = 0;
  int regs_per_thread = 0;
  int64_t shared_bytes_per_block = 0;  // static + dynamic, without reserved
  // Carveout the SM ran with (0 = the device's maximum).
  int64_t shared_carveout_bytes = 0;
};

// What bounds the number of resident blocks.
enum class OccupancyLimiter {
  kNone = 0,      // launch cannot run (a resource exceeds a per-block limit)
  kWarps = 1,     // warp slots per SM
  kBlocks = 2,    // resident blocks per SM
  kRegisters = 3,
  kSharedMemory = 4,
};

struct Occupancy {
  int blocks_per_sm = 0;
  int warps_per_sm = 0;
  double fraction = 0;  // warps_per_sm / maximum warps per SM
  OccupancyLimiter limiter = OccupancyLimiter::kNone;
};

// Theoretical occupancy of `shape` on `device`; all zero when the device
// info is invalid or the launch cannot fit on an SM.
Occupancy ComputeOccupancy(const DeviceInfo& device, const LaunchShape& shape);

}  // namespace deepcontext::gpu

// Turns completed CUPTI activity buffers into attribution: walks the
// records, converts them (ParseActivity) and hands them to GpuAttribution,
// giving it each device's limits (for occupancy) the first time a kernel of
// that device shows up. Walking the buffer is left to a function passed
// in (NextCuptiRecord in production), so this path can be tested with
// hand-made records and without CUPTI. No vendor headers.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "runtime/gpu/gpu_attribution.h"
#include "runtime/gpu/occupancy.h"

namespace deepcontext::cupti {

// Advances *record to the record after it in `buffer` (to the first when
// *record is nullptr). Returns false at the end of the valid bytes or on an
// error.
using NextActivityFn = bool (*)(void* user, uint8_t* buffer, size_t valid_size,
                                const void** record);

// The production NextActivityFn: cuptiActivityGetNextRecord. `user` is the
// loaded library's CuptiFunctions (CuptiLibrary::functions()).
bool NextCuptiRecord(void* user, uint8_t* buffer, size_t valid_size,
                     const void** record);

// Limits of a device, by the ordinal activity records carry; false when
// they cannot be had (yet).
using DeviceInfoQuery = std::function<bool(uint32_t device, gpu::DeviceInfo* info)>;

struct ActivityCounters {
  uint64_t buffers = 0;
  uint64_t records = 0;  // all records walked
  uint64_t kernels = 0;
  uint64_t memcpys = 0;
  uint64_t memsets = 0;
  uint64_t syncs = 0;
  uint64_t unsupported = 0;  // kinds the parser does not convert
  uint64_t failed = 0;       // buffers abandoned on an error (out of memory)
};

class ActivityProcessor {
 public:
  // `attribution` must outlive this object; `query` may be empty (no
  // occupancy then).
  ActivityProcessor(gpu::GpuAttribution& attribution, DeviceInfoQuery query);
  ActivityProcessor(const ActivityProcessor&) = delete;
  ActivityProcessor& operator=(const ActivityProcessor&) = delete;

  // Converts and attributes every record of one completed buffer; returns
  // the number of records walked. Runs on CUPTI's thread, so it never
  // throws. [any thread]
  size_t ProcessBuffer(uint8_t* buffer, size_t valid_size, NextActivityFn next,
                       void* user) noexcept;

  ActivityCounters Counters() const;
  // The devices whose limits were found, by ordinal.
  std::map<uint32_t, gpu::DeviceInfo> Devices() const;

 private:
  // Tries to give attribution the device's limits before its first kernel.
  void EnsureDeviceInfo(uint32_t device);

  // A device's limits are asked for at most this many times, so a device
  // the driver cannot describe does not cost a query per kernel.
  static constexpr int kMaxQueries = 3;

  gpu::GpuAttribution& attribution_;
  const DeviceInfoQuery query_;
  // Bit d set: device d < 64 is settled (found or given up on); the fast
  // path for the common case, read once per kernel.
  std::atomic<uint64_t> settled_{0};
  mutable std::mutex devices_mutex_;  // guards everything below
  std::map<uint32_t, gpu::DeviceInfo> devices_;
  std::map<uint32_t, int> queries_;
  ActivityCounters counters_;
};

}  // namespace deepcontext::cupti

#include "runtime/cupti/activity_processor.h"

#include <utility>

#include "runtime/cupti/activity_parser.h"
#include "runtime/cupti/cupti_functions.h"

namespace deepcontext::cupti {

bool NextCuptiRecord(void* user, uint8_t* buffer, size_t valid_size,
                     const void** record) {
  const auto* functions = static_cast<const CuptiFunctions*>(user);
  auto* current = static_cast<CUpti_Activity*>(const_cast<void*>(*record));
  if (functions == nullptr ||
      functions->activity_get_next_record(buffer, valid_size, &current) !=
          CUPTI_SUCCESS) {
    return false;
  }
  *record = current;
  return true;
}

ActivityProcessor::ActivityProcessor(gpu::GpuAttribution& attribution,
                                     DeviceInfoQuery query)
    : attribution_(attribution), query_(std::move(query)) {}

size_t ActivityProcessor::ProcessBuffer(uint8_t* buffer, size_t valid_size,
                                        NextActivityFn next,
                                        void* user) noexcept {
  if (buffer == nullptr || next == nullptr) return 0;
  ActivityCounters local;
  local.buffers = 1;
  try {
    // One ParsedActivity for the whole buffer: the kernel name's storage
    // is reused from record to record.
    ParsedActivity parsed;
    const void* record = nullptr;
    while (next(user, buffer, valid_size, &record)) {
      ++local.records;
      switch (ParseActivity(record, &parsed)) {
        case ActivityType::kKernel:
          ++local.kernels;
          EnsureDeviceInfo(parsed.kernel.device);
          attribution_.OnKernel(parsed.kernel);
          break;
        case ActivityType::kMemcpy:
          ++local.memcpys;
          attribution_.OnMemcpy(parsed.memcpy);
          break;
        case ActivityType::kMemset:
          ++local.memsets;
          attribution_.OnMemset(parsed.memset);
          break;
        case ActivityType::kSync:
          ++local.syncs;
          attribution_.OnSync(parsed.sync);
          break;
        case ActivityType::kUnsupported:
          ++local.unsupported;
          break;
      }
    }
  } catch (...) {
    // Out of memory while attributing: the rest of this buffer is lost,
    // the program goes on.
    local.failed = 1;
  }
  std::lock_guard<std::mutex> guard(devices_mutex_);
  counters_.buffers += local.buffers;
  counters_.records += local.records;
  counters_.kernels += local.kernels;
  counters_.memcpys += local.memcpys;
  counters_.memsets += local.memsets;
  counters_.syncs += local.syncs;
  counters_.unsupported += local.unsupported;
  counters_.failed += local.failed;
  return local.records;
}

void ActivityProcessor::EnsureDeviceInfo(uint32_t device) {
  const uint64_t bit = device < 64 ? uint64_t{1} << device : 0;
  if (bit != 0 && (settled_.load(std::memory_order_acquire) & bit) != 0) return;
  std::lock_guard<std::mutex> guard(devices_mutex_);
  if (devices_.count(device) != 0) return;
  int& queries = queries_[device];
  if (queries >= kMaxQueries || !query_) {
    settled_.fetch_or(bit, std::memory_order_release);
    return;
  }
  ++queries;
  gpu::DeviceInfo info;
  if (query_(device, &info)) {
    attribution_.SetDeviceInfo(device, info);
    devices_.emplace(device, std::move(info));
    settled_.fetch_or(bit, std::memory_order_release);
  }
}

ActivityCounters ActivityProcessor::Counters() const {
  std::lock_guard<std::mutex> guard(devices_mutex_);
  return counters_;
}

std::map<uint32_t, gpu::DeviceInfo> ActivityProcessor::Devices() const {
  std::lock_guard<std::mutex> guard(devices_mutex_);
  return devices_;
}

}  // namespace deepcontext::cupti

// Converts CUPTI activity records into the vendor-neutral records of
// gpu_records.h. The record layouts are those of the CUPTI headers the
// runtime is built with (CUDA 13.0: CUpti_ActivityKernel10, Memcpy6,
// MemcpyPtoP4, Memset4, Synchronization2); CuptiLibrary refuses a libcupti
// of another major version, whose layouts could differ. This header does
// not include the vendor headers.
#pragma once

#include "runtime/gpu/gpu_records.h"

namespace deepcontext::cupti {

enum class ActivityType {
  kUnsupported = 0,  // a kind this parser does not convert
  kKernel = 1,
  kMemcpy = 2,
  kMemset = 3,
  kSync = 4,
};

// One converted record; only the member named by the returned type is set.
struct ParsedActivity {
  gpu::KernelRecord kernel;
  gpu::MemcpyRecord memcpy;
  gpu::MemsetRecord memset;
  gpu::SyncRecord sync;
};

// Converts `record`, a `const CUpti_Activity*` as returned by
// cuptiActivityGetNextRecord. The kernel name is copied: CUPTI's string
// lives only as long as the activity buffer.
ActivityType ParseActivity(const void* record, ParsedActivity* out);

}  // namespace deepcontext::cupti

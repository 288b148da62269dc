// How the backend claims a GPU before instruction sampling or hardware
// counters drive its monitors (runtime/gpu/counter_claims.h): CUPTI names
// the context's device, the driver its UUID, which keys the host-wide lock.
// No vendor types: contexts are void*.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "runtime/gpu/counter_claims.h"

namespace deepcontext::cupti {

struct CuptiFunctions;  // cupti_functions.h

// `device_uuid` turns a device ordinal into its UUID ("" when unknown);
// `purpose` is what the holder does, for other claimants' messages. A
// device that cannot be named is measured without a lock, and the claim
// says so. `f` and `claims` must outlive the result.
gpu::ClaimDevice ClaimDeviceOf(const CuptiFunctions& f,
                               std::function<std::string(uint32_t)> device_uuid,
                               std::string purpose, gpu::CounterClaims& claims);

}  // namespace deepcontext::cupti

#include "runtime/cupti/device_claim.h"

#include <cupti.h>

#include <memory>
#include <utility>

#include "runtime/cupti/cupti_functions.h"

namespace deepcontext::cupti {

gpu::ClaimDevice ClaimDeviceOf(const CuptiFunctions& f,
                               std::function<std::string(uint32_t)> device_uuid,
                               std::string purpose, gpu::CounterClaims& claims) {
  return [&f, device_uuid = std::move(device_uuid), purpose = std::move(purpose),
          &claims](void* device_context) -> StatusOr<std::unique_ptr<gpu::CounterClaim>> {
    uint32_t ordinal = 0;
    if (f.get_device_id == nullptr) {
      return gpu::CounterClaims::Unnamed("this CUPTI lacks cuptiGetDeviceId");
    }
    if (f.get_device_id(static_cast<CUcontext>(device_context), &ordinal) != CUPTI_SUCCESS) {
      return gpu::CounterClaims::Unnamed("cuptiGetDeviceId failed for the context");
    }
    const std::string uuid = device_uuid(ordinal);
    if (uuid.empty()) {
      return gpu::CounterClaims::Unnamed("the driver gave no UUID for device " +
                                         std::to_string(ordinal));
    }
    return claims.Claim(uuid, purpose);
  };
}

}  // namespace deepcontext::cupti

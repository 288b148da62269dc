// Callbacks registered by tools, per domain.
//
// Dispatch happens on every framework op, so it reads a fixed array of
// slots with atomics and never locks; registration is rare and takes a mutex.
// A domain with one callback, the usual case (the profiler's own), has it
// named directly: its events skip the loop over the slots.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "deepcontext/dlmonitor.h"

struct dlmonitor_callback_registration {
  std::atomic<dlmonitor_callback_t> callback{nullptr};
  std::atomic<void*> user_data{nullptr};
  dlmonitor_domain_t domain = DLMONITOR_DOMAIN_FRAMEWORK_OP;
};

namespace deepcontext::dlmonitor {

class CallbackRegistry {
 public:
  static constexpr size_t kMaxPerDomain = 16;

  // Returns nullptr when the domain is invalid or full.
  dlmonitor_callback_registration* Register(dlmonitor_domain_t domain,
                                            dlmonitor_callback_t callback,
                                            void* user_data);
  bool Unregister(dlmonitor_callback_registration* handle);

  // True when at least one callback is registered for `domain`.
  bool HasCallbacks(dlmonitor_domain_t domain) const {
    return active_[domain].load(std::memory_order_acquire) != 0;
  }

  // Runs the domain's callbacks in registration order. [any thread]
  void Dispatch(const dlmonitor_event_t& event) const {
    const dlmonitor_callback_registration* sole =
        sole_[event.domain].load(std::memory_order_acquire);
    if (sole == nullptr) {
      DispatchAll(event);
      return;
    }
    const dlmonitor_callback_t callback = sole->callback.load(std::memory_order_acquire);
    if (callback != nullptr) {
      callback(&event, sole->user_data.load(std::memory_order_relaxed));
    }
  }

 private:
  // Dispatch over every slot in use: none or several callbacks.
  void DispatchAll(const dlmonitor_event_t& event) const;
  // Names the domain's only callback in sole_, or none. [under mutex_]
  void UpdateSole(dlmonitor_domain_t domain);

  // What every event reads first, together: the slot of the domain's
  // only callback (nullptr with none or several), and how many it has (at
  // most kMaxPerDomain).
  std::atomic<const dlmonitor_callback_registration*> sole_[DLMONITOR_DOMAIN_COUNT]{};
  std::atomic<uint8_t> active_[DLMONITOR_DOMAIN_COUNT]{};
  std::mutex mutex_;  // serializes Register/Unregister
  dlmonitor_callback_registration slots_[DLMONITOR_DOMAIN_COUNT][kMaxPerDomain];
  std::atomic<size_t> used_[DLMONITOR_DOMAIN_COUNT]{};    // high-water mark
};
static_assert(CallbackRegistry::kMaxPerDomain < 256, "active_ counts in 8 bits");

}  // namespace deepcontext::dlmonitor

#include "runtime/dlmonitor/callback_registry.h"

namespace deepcontext::dlmonitor {

dlmonitor_callback_registration* CallbackRegistry::Register(
    dlmonitor_domain_t domain, dlmonitor_callback_t callback,
    void* user_data) {
  if (domain < 0 || domain >= DLMONITOR_DOMAIN_COUNT || callback == nullptr) {
    return nullptr;
  }
  std::lock_guard<std::mutex> guard(mutex_);
  // Reuse a freed slot before growing, so register/unregister cycles in a
  // long-lived process never exhaust the table.
  size_t used = used_[domain].load(std::memory_order_relaxed);
  for (size_t i = 0; i <= used && i < kMaxPerDomain; ++i) {
    auto& slot = slots_[domain][i];
    if (slot.callback.load(std::memory_order_relaxed) != nullptr) continue;
    slot.domain = domain;
    slot.user_data.store(user_data, std::memory_order_relaxed);
    slot.callback.store(callback, std::memory_order_release);
    if (i == used) used_[domain].store(used + 1, std::memory_order_release);
    active_[domain].fetch_add(1, std::memory_order_release);
    UpdateSole(domain);
    return &slot;
  }
  return nullptr;
}

bool CallbackRegistry::Unregister(dlmonitor_callback_registration* handle) {
  if (handle == nullptr) return false;
  std::lock_guard<std::mutex> guard(mutex_);
  if (handle->callback.load(std::memory_order_relaxed) == nullptr) return false;
  handle->callback.store(nullptr, std::memory_order_release);
  active_[handle->domain].fetch_sub(1, std::memory_order_release);
  UpdateSole(handle->domain);
  return true;
}

void CallbackRegistry::UpdateSole(dlmonitor_domain_t domain) {
  const dlmonitor_callback_registration* sole = nullptr;
  if (active_[domain].load(std::memory_order_relaxed) == 1) {
    const size_t used = used_[domain].load(std::memory_order_relaxed);
    for (size_t i = 0; i < used; ++i) {
      if (slots_[domain][i].callback.load(std::memory_order_relaxed) != nullptr) {
        sole = &slots_[domain][i];
        break;
      }
    }
  }
  sole_[domain].store(sole, std::memory_order_release);
}

void CallbackRegistry::DispatchAll(const dlmonitor_event_t& event) const {
  const dlmonitor_domain_t domain = event.domain;
  const size_t used = used_[domain].load(std::memory_order_acquire);
  for (size_t i = 0; i < used; ++i) {
    const auto& slot = slots_[domain][i];
    dlmonitor_callback_t callback =
        slot.callback.load(std::memory_order_acquire);
    if (callback != nullptr) {
      callback(&event, slot.user_data.load(std::memory_order_relaxed));
    }
  }
}

}  // namespace deepcontext::dlmonitor

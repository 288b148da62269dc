#include "runtime/dlmonitor/callback_registry.h"

#include <gtest/gtest.h>

#include <vector>

namespace deepcontext::dlmonitor {
namespace {

void Record(const dlmonitor_event_t* event, void* user_data) {
  static_cast<std::vector<int>*>(user_data)->push_back(
      static_cast<int>(event->context));
}

void RecordTimesTen(const dlmonitor_event_t* event, void* user_data) {
  static_cast<std::vector<int>*>(user_data)->push_back(
      static_cast<int>(event->context) * 10);
}

dlmonitor_event_t Event(dlmonitor_domain_t domain, int context) {
  dlmonitor_event_t event{};
  event.struct_size = sizeof(event);
  event.domain = domain;
  event.context = context;
  return event;
}

TEST(CallbackRegistry, DispatchesInRegistrationOrderPerDomain) {
  CallbackRegistry registry;
  std::vector<int> calls;
  ASSERT_NE(registry.Register(DLMONITOR_DOMAIN_FRAMEWORK_OP, &Record, &calls), nullptr);
  ASSERT_NE(registry.Register(DLMONITOR_DOMAIN_FRAMEWORK_OP, &RecordTimesTen, &calls),
            nullptr);
  EXPECT_TRUE(registry.HasCallbacks(DLMONITOR_DOMAIN_FRAMEWORK_OP));
  EXPECT_FALSE(registry.HasCallbacks(DLMONITOR_DOMAIN_GPU_API));
  registry.Dispatch(Event(DLMONITOR_DOMAIN_FRAMEWORK_OP, 3));
  registry.Dispatch(Event(DLMONITOR_DOMAIN_GPU_API, 4));
  EXPECT_EQ(calls, (std::vector<int>{3, 30}));
}

TEST(CallbackRegistry, UnregisterStopsDeliveryAndFreesTheSlot) {
  CallbackRegistry registry;
  std::vector<int> calls;
  auto* handle = registry.Register(DLMONITOR_DOMAIN_MEMORY, &Record, &calls);
  ASSERT_TRUE(registry.Unregister(handle));
  EXPECT_FALSE(registry.Unregister(handle));
  EXPECT_FALSE(registry.HasCallbacks(DLMONITOR_DOMAIN_MEMORY));
  registry.Dispatch(Event(DLMONITOR_DOMAIN_MEMORY, 1));
  EXPECT_TRUE(calls.empty());
  // Register/unregister cycles never run out of slots.
  for (int i = 0; i < 100; ++i) {
    auto* h = registry.Register(DLMONITOR_DOMAIN_MEMORY, &Record, &calls);
    ASSERT_NE(h, nullptr);
    ASSERT_TRUE(registry.Unregister(h));
  }
}

// A domain with one callback names it directly; a second one, or the first
// one's leaving, puts the domain back on the loop over its slots.
TEST(CallbackRegistry, TheOnlyCallbackOfADomainComesAndGoesWithOthers) {
  CallbackRegistry registry;
  std::vector<int> calls;
  auto* first = registry.Register(DLMONITOR_DOMAIN_FRAMEWORK_OP, &Record, &calls);
  ASSERT_NE(first, nullptr);
  registry.Dispatch(Event(DLMONITOR_DOMAIN_FRAMEWORK_OP, 1));
  auto* second = registry.Register(DLMONITOR_DOMAIN_FRAMEWORK_OP, &RecordTimesTen, &calls);
  ASSERT_NE(second, nullptr);
  registry.Dispatch(Event(DLMONITOR_DOMAIN_FRAMEWORK_OP, 2));
  ASSERT_TRUE(registry.Unregister(first));
  registry.Dispatch(Event(DLMONITOR_DOMAIN_FRAMEWORK_OP, 3));
  ASSERT_TRUE(registry.Unregister(second));
  registry.Dispatch(Event(DLMONITOR_DOMAIN_FRAMEWORK_OP, 4));
  auto* again = registry.Register(DLMONITOR_DOMAIN_FRAMEWORK_OP, &Record, &calls);
  ASSERT_NE(again, nullptr);
  registry.Dispatch(Event(DLMONITOR_DOMAIN_FRAMEWORK_OP, 5));
  EXPECT_EQ(calls, (std::vector<int>{1, 2, 20, 30, 5}));
}

TEST(CallbackRegistry, LimitAndBadArguments) {
  CallbackRegistry registry;
  std::vector<int> calls;
  for (size_t i = 0; i < CallbackRegistry::kMaxPerDomain; ++i) {
    ASSERT_NE(registry.Register(DLMONITOR_DOMAIN_GPU_API, &Record, &calls), nullptr);
  }
  EXPECT_EQ(registry.Register(DLMONITOR_DOMAIN_GPU_API, &Record, &calls), nullptr);
  EXPECT_EQ(registry.Register(DLMONITOR_DOMAIN_COUNT, &Record, &calls), nullptr);
  EXPECT_EQ(registry.Register(DLMONITOR_DOMAIN_GPU_API, nullptr, &calls), nullptr);
}

}  // namespace
}  // namespace deepcontext::dlmonitor

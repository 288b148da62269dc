#include "runtime/dlmonitor/python_frame_cache.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace deepcontext::dlmonitor {
namespace {

// The call sites a step looks up come round in the same order at every
// step: two that share a slot of the thread's cache evict each other each
// time, and each such lookup goes to the shared map under its lock.
TEST(PythonFrameCache, CallSitesOfOneFunctionSpreadOverTheThreadCache) {
  // One function's call sites differ only in their instruction offsets:
  // 48 of them 64 bytes apart (a function calling an op every few lines),
  // in two functions. A hash that kept six bits of the offset put each
  // function's sites in one slot, and the cache kept 2 of the 96.
  std::vector<python::RawFrame> sites;
  for (uintptr_t code : {uintptr_t{0x7f3a1c2b4e70}, uintptr_t{0x7f3a1c01a9f0}}) {
    for (int32_t lasti = 10; lasti < 10 + 48 * 64; lasti += 64) {
      sites.push_back({reinterpret_cast<const void*>(code), lasti, 0x5a17u, false});
    }
  }
  PythonFrameCache::ThreadCache cache;
  for (size_t i = 0; i < sites.size(); ++i) {
    cache.Put(sites[i], ResolvedPythonFrame{FrameKey{1, static_cast<StringId>(i), 2, 0}});
  }
  size_t found = 0;
  for (size_t i = 0; i < sites.size(); ++i) {
    const ResolvedPythonFrame* hit = cache.Find(sites[i]);
    if (hit != nullptr && hit->key.name == static_cast<StringId>(i)) ++found;
  }
  // 96 keys in 512 slots: a few pairs share one at random.
  ASSERT_EQ(sites.size(), 96u);
  EXPECT_GE(found, 84u);
}

}  // namespace
}  // namespace deepcontext::dlmonitor

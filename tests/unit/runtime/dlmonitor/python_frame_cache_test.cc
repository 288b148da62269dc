#include "runtime/dlmonitor/python_frame_cache.h"

#include <gtest/gtest.h>

#include <cstdint>

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
  PythonFrameCache::ThreadCache cache;
  const uintptr_t codes[] = {0x7f3a1c2b4e70, 0x7f3a1c01a9f0};
  int put = 0;
  for (uintptr_t code : codes) {
    for (int32_t lasti = 10; lasti < 10 + 48 * 64; lasti += 64) {
      const python::RawFrame frame{reinterpret_cast<const void*>(code), lasti, 0x5a17u,
                                   false};
      cache.Put(frame, ResolvedPythonFrame{FrameKey{1, static_cast<StringId>(put), 2,
                                                    static_cast<uint32_t>(lasti)}});
      ++put;
    }
  }
  int found = 0;
  for (uintptr_t code : codes) {
    for (int32_t lasti = 10; lasti < 10 + 48 * 64; lasti += 64) {
      const python::RawFrame frame{reinterpret_cast<const void*>(code), lasti, 0x5a17u,
                                   false};
      const ResolvedPythonFrame* hit = cache.Find(frame);
      if (hit != nullptr && hit->key.line == static_cast<uint32_t>(lasti)) ++found;
    }
  }
  // 96 keys in 512 slots: a few pairs share one at random.
  EXPECT_GE(found, 84);
}

}  // namespace
}  // namespace deepcontext::dlmonitor

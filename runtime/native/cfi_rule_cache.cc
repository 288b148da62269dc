// The process-wide cache of CfiRules (cfi_rules.h): lock-free reads, one
// computation per pc.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdint>

#include "runtime/common/thread_instance.h"
#include "runtime/native/capture_stats.h"
#include "runtime/native/cfi_rules.h"
#include "runtime/native/cfi_walk.h"
#include "runtime/native/walk_memo.h"

namespace deepcontext::native {
namespace {

// The cache: open addressing on the pc. A slot's key is written last (with
// release), so a reader that sees its pc also sees its rule; a slot being
// filled carries kFilling and reads as a miss.
constexpr int kSlotBits = 16;
constexpr uint64_t kSlots = uint64_t{1} << kSlotBits;
constexpr int kMaxProbes = 32;
constexpr uint64_t kFilling = uint64_t{1} << 63;

struct Slot {
  std::atomic<uint64_t> key{0};
  std::atomic<uint64_t> rule{0};
#if defined(__aarch64__)
  std::atomic<int32_t> ra_offset{0};  // CfiRule::ra_offset, beside the packed rest
#endif
};
Slot g_slots[kSlots];
std::atomic<int> g_cached{0};
// Per-thread cache misses, and rules computed (FDE search and CFA program)
// for want of a table slot: both should stop growing once a workload's
// return addresses were all seen.
std::atomic<uint64_t> g_thread_fills{0};
std::atomic<uint64_t> g_uncached_computes{0};
// Time spent computing rules (FDE search and CFA program), which a
// capture's unwind time includes the first time it meets a return address.
std::atomic<uint64_t> g_compute_ns{0};
std::atomic<uint64_t> g_minor_faults{0};
std::atomic<uint64_t> g_major_faults{0};

// Two system calls per computed rule, so only when the stats are asked for.
struct ThreadFaults {
  uint64_t minor = 0;
  uint64_t major = 0;
};

ThreadFaults ReadThreadFaults() {
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return {};
  return {static_cast<uint64_t>(usage.ru_minflt), static_cast<uint64_t>(usage.ru_majflt)};
}

CfiRule TimedComputeCfiRule(uintptr_t pc) {
  const bool count_faults = CaptureStatsEnabled();
  const ThreadFaults faults_before = count_faults ? ReadThreadFaults() : ThreadFaults{};
  const auto start = std::chrono::steady_clock::now();
  const CfiRule rule = ComputeCfiRule(pc);
  g_compute_ns.fetch_add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::steady_clock::now() - start).count()),
                         std::memory_order_relaxed);
  if (count_faults) {
    const ThreadFaults faults_after = ReadThreadFaults();
    g_minor_faults.fetch_add(faults_after.minor - faults_before.minor, std::memory_order_relaxed);
    g_major_faults.fetch_add(faults_after.major - faults_before.major, std::memory_order_relaxed);
  }
  return rule;
}

uint64_t Pack(const CfiRule& rule) {
  return static_cast<uint64_t>(rule.kind) |
         (static_cast<uint64_t>(rule.cfa_from_frame_pointer) << 2) |
         (static_cast<uint64_t>(rule.frame_pointer_saved) << 3) |
         (static_cast<uint64_t>(rule.cfa_loaded) << 4) |
         (static_cast<uint64_t>(rule.fp_saved_below_fp) << 5) |
         (static_cast<uint64_t>(static_cast<uint16_t>(rule.saved_fp_offset))
          << 16) |
         (static_cast<uint64_t>(static_cast<uint32_t>(rule.cfa_offset)) << 32);
}

CfiRule Unpack(uint64_t packed) {
  CfiRule rule;
  rule.kind = static_cast<CfiRule::Kind>(packed & 3);
  rule.cfa_from_frame_pointer = (packed >> 2) & 1;
  rule.frame_pointer_saved = (packed >> 3) & 1;
  rule.cfa_loaded = (packed >> 4) & 1;
  rule.fp_saved_below_fp = (packed >> 5) & 1;
  rule.saved_fp_offset = static_cast<int16_t>((packed >> 16) & 0xffff);
  rule.cfa_offset = static_cast<int32_t>(packed >> 32);
  return rule;
}

uint64_t SlotOf(uintptr_t pc) {
  return (static_cast<uint64_t>(pc) * 0x9E3779B97F4A7C15ull) >>
         (64 - kSlotBits);
}

CfiRule SharedCachedRule(uintptr_t pc) {
  const uint64_t key = static_cast<uint64_t>(pc);
  uint64_t index = SlotOf(pc);
  for (int probe = 0; probe < kMaxProbes; ++probe) {
    Slot& slot = g_slots[(index + probe) & (kSlots - 1)];
    uint64_t seen = slot.key.load(std::memory_order_acquire);
    if (seen == key) {
      CfiRule rule = Unpack(slot.rule.load(std::memory_order_relaxed));
#if defined(__aarch64__)
      rule.ra_offset = slot.ra_offset.load(std::memory_order_relaxed);
#endif
      return rule;
    }
    if (seen == (key | kFilling)) break;  // another thread is filling it
    if (seen != 0) continue;
    // Empty: claim it, compute, publish.
    if (!slot.key.compare_exchange_strong(seen, key | kFilling,
                                          std::memory_order_acq_rel)) {
      if (seen == key || seen == (key | kFilling)) break;
      continue;
    }
    const CfiRule rule = TimedComputeCfiRule(pc);
    slot.rule.store(Pack(rule), std::memory_order_relaxed);
#if defined(__aarch64__)
    slot.ra_offset.store(rule.ra_offset, std::memory_order_relaxed);
#endif
    slot.key.store(key, std::memory_order_release);
    g_cached.fetch_add(1, std::memory_order_relaxed);
    return rule;
  }
  // Table crowded here, or the rule is being filled: compute without caching.
  g_uncached_computes.fetch_add(1, std::memory_order_relaxed);
  return TimedComputeCfiRule(pc);
}

}  // namespace

using internal::ThreadUnwindState;

namespace internal {
ThreadUnwindState* ThisThreadUnwindState() {
  // Not a thread_local: 130 KiB of thread-locals would push the library's
  // whole TLS block out of the loader's static TLS space, and every
  // thread-local read of the runtime, on every op and launch, would become
  // a call (see -mtls-dialect in CMakeLists.txt).
  return ThreadInstance<ThreadUnwindState>();
}
}  // namespace internal

CfiThreadCache* ThisThreadCfiCache() {
  ThreadUnwindState* state = internal::ThisThreadUnwindState();
  return state != nullptr ? &state->rules : nullptr;
}

const CfiRule& FillCfiThreadCache(CfiThreadCache& cache, uintptr_t pc) {
  g_thread_fills.fetch_add(1, std::memory_order_relaxed);
  const uint64_t index = CfiThreadCache::Index(pc);
  cache.key[1][index] = cache.key[0][index];
  cache.rule[1][index] = cache.rule[0][index];
  cache.rule[0][index] = SharedCachedRule(pc);
  cache.key[0][index] = pc;
  return cache.rule[0][index];
}

CfiRule CachedCfiRule(uintptr_t pc) {
  CfiThreadCache* cache = ThisThreadCfiCache();
  // The thread is exiting: the shared table alone.
  if (cache == nullptr) return SharedCachedRule(pc);
  return CachedCfiRule(*cache, pc);
}

int CfiRuleCacheSize() { return g_cached.load(std::memory_order_relaxed); }

CfiCacheCounters CfiRuleCacheCounters() {
  return CfiCacheCounters{g_thread_fills.load(std::memory_order_relaxed),
                          g_uncached_computes.load(std::memory_order_relaxed),
                          g_compute_ns.load(std::memory_order_relaxed),
                          g_minor_faults.load(std::memory_order_relaxed),
                          g_major_faults.load(std::memory_order_relaxed)};
}

}  // namespace deepcontext::native

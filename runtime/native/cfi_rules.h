// Per-pc unwind rules read from a module's .eh_frame, cached process-wide.
//
// The "cfi-cache" unwinder (native_stack.h) needs, for each return address,
// how to find the caller's frame: where the canonical frame address (CFA)
// is relative to the stack or frame pointer, and whether the frame pointer
// was saved. libgcc (glibc backtrace()) re-finds the FDE and re-runs its
// DWARF CFA program for every frame of every capture; here that happens once
// per distinct pc, and the answer is kept in a lock-free table, so a capture
// costs one table probe and two loads per frame.
//
// x86-64 and AArch64; elsewhere every rule is kUnsupported and the unwinder
// is not offered. On AArch64 "rbp" below is the frame-pointer register x29
// and "rsp" the stack pointer: a call leaves the return address in x30,
// which the callee saves in its frame, so where it was saved is part of the
// rule (ra_offset), where x86-64's call pushes it right below the CFA.
#pragma once

#include <cstdint>

namespace deepcontext::native {

struct CfiRule {
  enum class Kind : uint8_t {
    // How to step to the caller is known (fields below).
    kStep = 1,
    // The outermost frame (return address undefined, e.g. _start, clone) or
    // no FDE covers the pc: the stack ends here, as for libgcc.
    kEnd = 2,
    // A rule this unwinder does not model (CFA from an expression or another
    // register, signal frames, ...): the capture falls back to libgcc.
    kUnsupported = 3,
  };
  Kind kind = Kind::kUnsupported;
  // CFA = (cfa_from_frame_pointer ? rbp : rsp) + cfa_offset, or, when
  // cfa_loaded, the word stored there (GCC's frames realigned through a
  // DRAP register: CFA = *(rbp + cfa_offset)).
  bool cfa_from_frame_pointer = false;
  bool cfa_loaded = false;
  // The caller's rbp was saved at CFA + saved_fp_offset (at rbp +
  // saved_fp_offset when fp_saved_below_fp); else rbp is unchanged.
  bool frame_pointer_saved = false;
  bool fp_saved_below_fp = false;
  int16_t saved_fp_offset = 0;
  int32_t cfa_offset = 0;
#if defined(__aarch64__)
  // Where the prologue saved x30, the return address into the caller, from
  // the CFA: with the frame record at the bottom of the frame (GCC), a
  // frame's size away. On x86-64 the call pushed it right below the CFA
  // (ReturnAddressOffset), and the rule stays 12 bytes.
  int32_t ra_offset = -8;
#endif
};
static_assert(sizeof(CfiRule) <= 16, "the thread cache holds 2048 of them");

// Where the return address into the caller was saved, from the CFA.
inline int32_t ReturnAddressOffset(const CfiRule& rule) {
#if defined(__aarch64__)
  return rule.ra_offset;
#else
  (void)rule;
  return -8;
#endif
}

// The code address in a saved return address. AArch64 code built with
// return-address signing (-mbranch-protection, the default of some
// distributions) stores it with an authentication code in its top bits;
// XPACLRI clears them (a no-op hint on processors without pointer
// authentication, and for unsigned addresses). Elsewhere the address as is.
inline uintptr_t CodeAddress(uintptr_t saved) {
#if defined(__aarch64__)
  register uintptr_t lr asm("x30") = saved;
  asm("hint #7" : "+r"(lr));  // xpaclri
  return lr;
#else
  return saved;
#endif
}

// Reads the rule for the instruction at `pc` (a call site: return address
// minus one) from the .eh_frame data of its module. Slow (FDE lookup plus a
// CFA program run); use CachedCfiRule. Not async-signal-safe.
CfiRule ComputeCfiRule(uintptr_t pc);

// ComputeCfiRule through the process-wide cache. [any thread] Lock-free on a
// hit; a miss computes the rule (racing threads compute the same one).
CfiRule CachedCfiRule(uintptr_t pc);

// A thread's copy of the rules it used last, in front of the process-wide
// table: that table is 1 MiB and its slots are spread by the hash, so a
// capture of a deep stack would miss the CPU caches on most frames; a
// thread's recent pcs stay in L1 here. Two ways per set: direct-mapped, a
// workload's few hundred return addresses collided often enough that the
// H200 ResNet-50 run missed 1.4 times per capture (68232 misses for 556
// rules, DEEPCONTEXT_NATIVE_STATS=1), each a probe of the cold table. A miss
// moves way 0 to way 1 and fills way 0, so two pcs of one set that
// alternate both stay. Rules are kept unpacked and read in place (the
// inline lookup below): a rule returned by value was stored field by field
// and reloaded whole, a store-forwarding stall that was most of a capture's
// time (bench/event_cost.cc, native rows).
struct CfiThreadCache {
  static constexpr int kBits = 10;  // sets
  static constexpr int kWays = 2;
  uint64_t key[kWays][1 << kBits] = {};
  CfiRule rule[kWays][1 << kBits] = {};

  static uint64_t Index(uintptr_t pc) {
    return (static_cast<uint64_t>(pc) * 0x9E3779B97F4A7C15ull) >> (64 - kBits);
  }
};

// The calling thread's cache (on the heap: runtime/common/thread_instance.h);
// nullptr while the thread exits.
CfiThreadCache* ThisThreadCfiCache();

// Puts the rule for `pc` into way 0 of its set of `cache` (way 0's rule
// moving to way 1) and returns it.
const CfiRule& FillCfiThreadCache(CfiThreadCache& cache, uintptr_t pc);

// CachedCfiRule(pc) through the calling thread's `cache`; the reference is
// valid until the next lookup in that cache.
inline const CfiRule& CachedCfiRule(CfiThreadCache& cache, uintptr_t pc) {
  const uint64_t index = CfiThreadCache::Index(pc);
  if (cache.key[0][index] == pc) return cache.rule[0][index];
  if (cache.key[1][index] == pc) return cache.rule[1][index];
  return FillCfiThreadCache(cache, pc);
}

// Whether this build and process can unwind with CFI rules (x86-64 or
// AArch64, and libgcc's FDE lookup present).
bool CfiRulesSupported();

// Distinct pcs cached so far, for tests and benchmarks.
int CfiRuleCacheSize();

// Lookups that missed a thread's cache (and went to the process table),
// rules computed without being kept (the table crowded at their slot), and
// the time computing rules took: what first sights add to unwinding.
struct CfiCacheCounters {
  uint64_t thread_fills = 0;
  uint64_t uncached_computes = 0;
  uint64_t compute_ns = 0;  // computing rules, all of them
  // Page faults the computing threads took meanwhile, counted only under
  // DEEPCONTEXT_NATIVE_STATS: the FDE search and the CFA programs read
  // .eh_frame_hdr and .eh_frame, which nothing else in the process reads,
  // so their first reads fault (major faults when the file's pages are not
  // cached yet).
  uint64_t minor_faults = 0;
  uint64_t major_faults = 0;
};
CfiCacheCounters CfiRuleCacheCounters();

}  // namespace deepcontext::native

#include "runtime/native/cfi_rules.h"

#include <gtest/gtest.h>
#include <ucontext.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/native/native_stack.h"
#include "tests/unit/runtime/native/call_chain.h"

#if defined(__x86_64__)
// A function with hand-written CFI: one label per row of its unwind table,
// so each rule the parser must produce is known exactly. Never called.
asm(R"(
  .text
  .globl dc_cfi_probe_entry, dc_cfi_probe_pushed, dc_cfi_probe_framed
  .globl dc_cfi_probe_remembered, dc_cfi_probe_restored, dc_cfi_probe_popped
  .globl dc_cfi_expr_body, dc_cfi_end_body, dc_cfi_drap_body
  .type dc_cfi_probe_entry, @function
dc_cfi_probe_entry:
  .cfi_startproc
  push %rbp
dc_cfi_probe_pushed:
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
  mov %rsp, %rbp
dc_cfi_probe_framed:
  .cfi_def_cfa_register %rbp
  nop
  .cfi_remember_state
  .cfi_def_cfa %rsp, 40
  .cfi_same_value %rbp
dc_cfi_probe_remembered:
  nop
  .cfi_restore_state
dc_cfi_probe_restored:
  nop
  pop %rbp
dc_cfi_probe_popped:
  .cfi_def_cfa %rsp, 8
  .cfi_restore %rbp
  ret
  .cfi_endproc
  .size dc_cfi_probe_entry, .-dc_cfi_probe_entry

  .type dc_cfi_expr_fn, @function
dc_cfi_expr_fn:
  .cfi_startproc
  nop
  # DW_CFA_def_cfa_expression: DW_OP_breg7 (rsp) 8
  .cfi_escape 0x0f, 0x02, 0x77, 0x08
dc_cfi_expr_body:
  nop
  ret
  .cfi_endproc
  .size dc_cfi_expr_fn, .-dc_cfi_expr_fn

  # GCC's realignment through a DRAP register (r10), as in AVX code with
  # alloca: once rbp is set up, CFA = *(rbp - 8) and rbp is saved at rbp.
  .type dc_cfi_drap_fn, @function
dc_cfi_drap_fn:
  .cfi_startproc
  lea 0x8(%rsp), %r10
  .cfi_def_cfa %r10, 0
  and $-32, %rsp
  pushq -0x8(%r10)
  push %rbp
  mov %rsp, %rbp
  # DW_CFA_expression: rbp, DW_OP_breg6 (rbp) 0
  .cfi_escape 0x10, 0x06, 0x02, 0x76, 0x00
  push %r10
  # DW_CFA_def_cfa_expression: DW_OP_breg6 (rbp) -8; DW_OP_deref
  .cfi_escape 0x0f, 0x03, 0x76, 0x78, 0x06
dc_cfi_drap_body:
  nop
  ret
  .cfi_endproc
  .size dc_cfi_drap_fn, .-dc_cfi_drap_fn

  .type dc_cfi_end_fn, @function
dc_cfi_end_fn:
  .cfi_startproc
  .cfi_undefined %rip
  nop
dc_cfi_end_body:
  nop
  ret
  .cfi_endproc
  .size dc_cfi_end_fn, .-dc_cfi_end_fn
)");

extern "C" char dc_cfi_probe_entry[], dc_cfi_probe_pushed[],
    dc_cfi_probe_framed[], dc_cfi_probe_remembered[], dc_cfi_probe_restored[],
    dc_cfi_probe_popped[], dc_cfi_expr_body[], dc_cfi_end_body[],
    dc_cfi_drap_body[];
#endif

namespace deepcontext::native {
namespace {

#if defined(__x86_64__)

uintptr_t Addr(const char* label) { return reinterpret_cast<uintptr_t>(label); }

void ExpectStep(uintptr_t pc, bool from_fp, int cfa_offset, bool fp_saved,
                int fp_offset) {
  const CfiRule rule = ComputeCfiRule(pc);
  ASSERT_EQ(rule.kind, CfiRule::Kind::kStep);
  EXPECT_EQ(rule.cfa_from_frame_pointer, from_fp);
  EXPECT_EQ(rule.cfa_offset, cfa_offset);
  EXPECT_EQ(rule.frame_pointer_saved, fp_saved);
  if (fp_saved) {
    EXPECT_EQ(rule.saved_fp_offset, fp_offset);
  }
}

TEST(CfiRulesTest, FollowsEachRowOfTheProgram) {
  ASSERT_TRUE(CfiRulesSupported());
  ExpectStep(Addr(dc_cfi_probe_entry), false, 8, false, 0);
  ExpectStep(Addr(dc_cfi_probe_pushed), false, 16, true, -16);
  ExpectStep(Addr(dc_cfi_probe_framed), true, 16, true, -16);
  // remember_state / restore_state keep the CFA with the row, as libgcc.
  ExpectStep(Addr(dc_cfi_probe_remembered), false, 40, false, 0);
  ExpectStep(Addr(dc_cfi_probe_restored), true, 16, true, -16);
  ExpectStep(Addr(dc_cfi_probe_popped), false, 8, false, 0);
}

TEST(CfiRulesTest, ExpressionIsUnsupportedAndUndefinedReturnEndsTheStack) {
  EXPECT_EQ(ComputeCfiRule(Addr(dc_cfi_expr_body)).kind,
            CfiRule::Kind::kUnsupported);
  EXPECT_EQ(ComputeCfiRule(Addr(dc_cfi_end_body)).kind, CfiRule::Kind::kEnd);
}

TEST(CfiRulesTest, RealignedFrameLoadsItsCfa) {
  const CfiRule rule = ComputeCfiRule(Addr(dc_cfi_drap_body));
  ASSERT_EQ(rule.kind, CfiRule::Kind::kStep);
  EXPECT_TRUE(rule.cfa_from_frame_pointer);
  EXPECT_TRUE(rule.cfa_loaded);
  EXPECT_EQ(rule.cfa_offset, -8);
  EXPECT_TRUE(rule.frame_pointer_saved);
  EXPECT_TRUE(rule.fp_saved_below_fp);
  EXPECT_EQ(rule.saved_fp_offset, 0);
  // Through the cache's packed form too.
  const CfiRule cached = CachedCfiRule(Addr(dc_cfi_drap_body));
  EXPECT_TRUE(cached.cfa_loaded);
  EXPECT_TRUE(cached.fp_saved_below_fp);
  EXPECT_EQ(cached.cfa_offset, -8);
}

TEST(CfiRulesTest, CacheReturnsTheComputedRule) {
  const uintptr_t pc = Addr(dc_cfi_probe_framed);
  const int before = CfiRuleCacheSize();
  const CfiRule first = CachedCfiRule(pc);
  const CfiRule again = CachedCfiRule(pc);
  EXPECT_EQ(CfiRuleCacheSize(), before + 1);
  for (const CfiRule& rule : {first, again}) {
    EXPECT_EQ(rule.kind, CfiRule::Kind::kStep);
    EXPECT_TRUE(rule.cfa_from_frame_pointer);
    EXPECT_EQ(rule.cfa_offset, 16);
    EXPECT_EQ(rule.saved_fp_offset, -16);
  }
}

// Two pcs of one set of a thread's cache both stay when a capture uses them
// in turn (a direct-mapped cache lost one to the other every time); a third
// evicts the one used longer ago. Every answer is the process table's.
TEST(CfiRulesTest, ThreadCacheKeepsTwoPcsOfOneSet) {
  auto cache = std::make_unique<CfiThreadCache>();
  const uintptr_t a = Addr(dc_cfi_probe_framed);
  auto same_set_after = [](uintptr_t pc) {
    uintptr_t next = pc + 1;
    while (CfiThreadCache::Index(next) != CfiThreadCache::Index(pc)) ++next;
    return next;
  };
  const uintptr_t b = same_set_after(a);
  const uintptr_t c = same_set_after(b);
  // The process table's answers (through this thread's own cache, which
  // counts its misses in the same counter: read first).
  const CfiRule rule_a = CachedCfiRule(a);
  const CfiRule rule_b = CachedCfiRule(b);
  auto misses = [] { return CfiRuleCacheCounters().thread_fills; };
  const uint64_t before = misses();
  for (int i = 0; i < 50; ++i) {
    const CfiRule& got_a = CachedCfiRule(*cache, a);
    EXPECT_TRUE(got_a.kind == rule_a.kind && got_a.cfa_offset == rule_a.cfa_offset);
    const CfiRule& got_b = CachedCfiRule(*cache, b);
    EXPECT_TRUE(got_b.kind == rule_b.kind && got_b.cfa_offset == rule_b.cfa_offset);
  }
  EXPECT_EQ(misses() - before, 2u);
  CachedCfiRule(*cache, c);                 // evicts a (used before b)
  CachedCfiRule(*cache, b);                 // still there
  EXPECT_EQ(misses() - before, 3u);
  CachedCfiRule(*cache, a);
  EXPECT_EQ(misses() - before, 4u);
}

// Captures with libgcc and with the cached rules from one function, so the
// stacks differ only in the innermost return address.
struct TwoCaptures {
  std::vector<uintptr_t> libgcc;
  std::vector<uintptr_t> cached;
};

__attribute__((noinline)) void CaptureBoth(void* arg) {
  auto* out = static_cast<TwoCaptures*>(arg);
  uintptr_t pcs[kMaxNativeDepth];
  int n = Unwinder(UnwinderKind::kGlibcBacktrace).Capture(pcs, kMaxNativeDepth, 0);
  out->libgcc.assign(pcs, pcs + n);
  n = Unwinder(UnwinderKind::kCfiCache).Capture(pcs, kMaxNativeDepth, 0);
  out->cached.assign(pcs, pcs + n);
  asm volatile("" ::: "memory");
}

void ExpectSameStack(const TwoCaptures& got) {
  ASSERT_GE(got.libgcc.size(), 3u);
  ASSERT_EQ(got.cached.size(), got.libgcc.size());
  for (size_t i = 0; i + 1 < got.libgcc.size(); ++i) {
    EXPECT_EQ(got.cached[i], got.libgcc[i]) << "frame " << i;
  }
  // Every frame was stepped with a cached rule (no libgcc fallback), and the
  // outermost one ends the stack.
  for (size_t i = 1; i < got.cached.size(); ++i) {
    EXPECT_EQ(CachedCfiRule(got.cached[i] - 1).kind, CfiRule::Kind::kStep)
        << "frame " << i;
  }
  EXPECT_EQ(CachedCfiRule(got.cached[0] - 1).kind, CfiRule::Kind::kEnd);
}

TEST(CfiRulesTest, MatchesLibgccThroughOptimizedCode) {
  TwoCaptures got;
  native_chain::RunAtDepth(12, CaptureBoth, &got);
  ExpectSameStack(got);
}

// Over-aligned locals plus alloca: GCC realigns the stack through a DRAP
// register, as in thousands of libtorch's AVX kernels. Captures from inside
// it, through its frame.
__attribute__((noinline)) void CaptureFromRealignedFrame(TwoCaptures* out, int size) {
  alignas(32) volatile char aligned[32] = {};
  auto* dynamic = static_cast<volatile char*>(__builtin_alloca(size));
  dynamic[0] = aligned[0];
  CaptureBoth(out);
  asm volatile("" ::: "memory");
}

TEST(CfiRulesTest, MatchesLibgccThroughRealignedFrames) {
  TwoCaptures got;
  volatile int size = 64;
  CaptureFromRealignedFrame(&got, size);
  ExpectSameStack(got);
  bool realigned = false;
  for (uintptr_t pc : got.cached) realigned = realigned || CachedCfiRule(pc - 1).cfa_loaded;
  // Compilers that realign another way leave nothing to check here.
  if (!realigned) GTEST_SKIP() << "the compiler did not realign through a DRAP register";
}

int CompareCapturing(const void* a, const void* /*b*/) {
  static bool captured = false;
  if (!captured) {
    captured = true;
    CaptureBoth(const_cast<void*>(static_cast<const void*>(
        *static_cast<TwoCaptures* const*>(a))));
  }
  return 0;
}

TEST(CfiRulesTest, MatchesLibgccThroughLibcCallback) {
  TwoCaptures got;
  TwoCaptures* items[2] = {&got, &got};
  qsort(items, 2, sizeof(items[0]), CompareCapturing);
  ExpectSameStack(got);
}

TEST(CfiRulesTest, MatchesLibgccOnAnotherThread) {
  TwoCaptures got;
  std::thread([&] { native_chain::RunAtDepth(5, CaptureBoth, &got); }).join();
  ExpectSameStack(got);
}

ucontext_t g_main_context;
ucontext_t g_other_context;
TwoCaptures* g_other_result = nullptr;

void CaptureOnOtherStack() { CaptureBoth(g_other_result); }

// Off the thread's own stack (coroutines, sigaltstack) the cached rules are
// not used (loads are bounded by the thread's stack): libgcc unwinds, so
// both captures agree.
TEST(CfiRulesTest, OnAnotherStackFallsBackToLibgcc) {
  std::vector<char> stack(256 * 1024);
  TwoCaptures got;
  g_other_result = &got;
  ASSERT_EQ(getcontext(&g_other_context), 0);
  g_other_context.uc_stack.ss_sp = stack.data();
  g_other_context.uc_stack.ss_size = stack.size();
  g_other_context.uc_link = &g_main_context;
  makecontext(&g_other_context, CaptureOnOtherStack, 0);
  ASSERT_EQ(swapcontext(&g_main_context, &g_other_context), 0);
  ASSERT_GE(got.libgcc.size(), 2u);
  ASSERT_EQ(got.cached.size(), got.libgcc.size());
  for (size_t i = 0; i + 1 < got.libgcc.size(); ++i) {
    EXPECT_EQ(got.cached[i], got.libgcc[i]) << "frame " << i;
  }
}

#else

TEST(CfiRulesTest, NotOfferedOffX86) {
  EXPECT_FALSE(CfiRulesSupported());
  EXPECT_FALSE(UnwinderAvailable(UnwinderKind::kCfiCache));
}

#endif

}  // namespace
}  // namespace deepcontext::native

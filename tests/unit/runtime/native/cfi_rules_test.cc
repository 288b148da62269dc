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
#elif defined(__aarch64__)
// The same for AArch64: a frame record {x29, x30} pushed below a 48-byte
// frame, x30 saved apart from x29 (as GCC does when the record is not at the
// bottom), a return address signed with PAC (-mbranch-protection), and the
// outermost frame. Never called.
asm(R"(
  .text
  .globl dc_cfi_probe_entry, dc_cfi_probe_pushed, dc_cfi_probe_framed
  .globl dc_cfi_probe_popped, dc_cfi_split_body, dc_cfi_signed_body
  .globl dc_cfi_expr_body, dc_cfi_end_body
  .type dc_cfi_probe_entry, %function
dc_cfi_probe_entry:
  .cfi_startproc
  stp x29, x30, [sp, -48]!
dc_cfi_probe_pushed:
  .cfi_def_cfa_offset 48
  .cfi_offset 29, -48
  .cfi_offset 30, -40
  mov x29, sp
dc_cfi_probe_framed:
  .cfi_def_cfa_register 29
  nop
  ldp x29, x30, [sp], 48
dc_cfi_probe_popped:
  .cfi_restore 30
  .cfi_restore 29
  .cfi_def_cfa 31, 0
  ret
  .cfi_endproc
  .size dc_cfi_probe_entry, .-dc_cfi_probe_entry

  .type dc_cfi_split_fn, %function
dc_cfi_split_fn:
  .cfi_startproc
  sub sp, sp, 64
  .cfi_def_cfa_offset 64
  stp x29, x30, [sp, 16]
  .cfi_offset 29, -48
  .cfi_offset 30, -40
  str x19, [sp, 32]
  .cfi_offset 19, -32
dc_cfi_split_body:
  nop
  ret
  .cfi_endproc
  .size dc_cfi_split_fn, .-dc_cfi_split_fn

  .type dc_cfi_signed_fn, %function
dc_cfi_signed_fn:
  .cfi_startproc
  hint #25
  .cfi_negate_ra_state
  stp x29, x30, [sp, -16]!
  .cfi_def_cfa_offset 16
  .cfi_offset 29, -16
  .cfi_offset 30, -8
dc_cfi_signed_body:
  nop
  ret
  .cfi_endproc
  .size dc_cfi_signed_fn, .-dc_cfi_signed_fn

  .type dc_cfi_expr_fn, %function
dc_cfi_expr_fn:
  .cfi_startproc
  stp x29, x30, [sp, -16]!
  .cfi_offset 29, -16
  .cfi_offset 30, -8
  # DW_CFA_def_cfa_expression: DW_OP_breg31 (sp) 16
  .cfi_escape 0x0f, 0x02, 0x8f, 0x10
dc_cfi_expr_body:
  nop
  ret
  .cfi_endproc
  .size dc_cfi_expr_fn, .-dc_cfi_expr_fn

  .type dc_cfi_end_fn, %function
dc_cfi_end_fn:
  .cfi_startproc
  .cfi_undefined 30
  nop
dc_cfi_end_body:
  nop
  ret
  .cfi_endproc
  .size dc_cfi_end_fn, .-dc_cfi_end_fn
)");

extern "C" char dc_cfi_probe_entry[], dc_cfi_probe_pushed[],
    dc_cfi_probe_framed[], dc_cfi_probe_popped[], dc_cfi_split_body[],
    dc_cfi_signed_body[], dc_cfi_expr_body[], dc_cfi_end_body[];
#endif

namespace deepcontext::native {
namespace {

#if defined(__x86_64__) || defined(__aarch64__)

uintptr_t Addr(const char* label) { return reinterpret_cast<uintptr_t>(label); }

void ExpectStep(uintptr_t pc, bool from_fp, int cfa_offset, bool fp_saved,
                int fp_offset, int ra_offset = -8) {
  const CfiRule rule = ComputeCfiRule(pc);
  ASSERT_EQ(rule.kind, CfiRule::Kind::kStep);
  EXPECT_EQ(rule.cfa_from_frame_pointer, from_fp);
  EXPECT_EQ(rule.cfa_offset, cfa_offset);
  EXPECT_EQ(rule.frame_pointer_saved, fp_saved);
  if (fp_saved) {
    EXPECT_EQ(rule.saved_fp_offset, fp_offset);
  }
  EXPECT_EQ(ReturnAddressOffset(rule), ra_offset);
}

#endif

#if defined(__x86_64__)

// The probe's framed row: CFA = rbp + 16, rbp saved at CFA - 16.
constexpr int kFramedCfaOffset = 16;
constexpr int kFramedFpOffset = -16;
constexpr int kFramedRaOffset = -8;

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

#elif defined(__aarch64__)

// The probe's framed row: CFA = x29 + 48, x29 saved at CFA - 48.
constexpr int kFramedCfaOffset = 48;
constexpr int kFramedFpOffset = -48;
constexpr int kFramedRaOffset = -40;

TEST(CfiRulesTest, FollowsEachRowOfTheProgram) {
  ASSERT_TRUE(CfiRulesSupported());
  // At the entry and after the epilogue the return address is in x30, not
  // saved: no call site has such a row, and the rule is not modelled.
  EXPECT_EQ(ComputeCfiRule(Addr(dc_cfi_probe_entry)).kind, CfiRule::Kind::kUnsupported);
  ExpectStep(Addr(dc_cfi_probe_pushed), false, 48, true, -48, -40);
  ExpectStep(Addr(dc_cfi_probe_framed), true, 48, true, -48, -40);
  EXPECT_EQ(ComputeCfiRule(Addr(dc_cfi_probe_popped)).kind, CfiRule::Kind::kUnsupported);
}

TEST(CfiRulesTest, ReturnAddressSavedAnywhereInTheFrameOrSigned) {
  // The record stored above the locals, from an sp-based CFA.
  ExpectStep(Addr(dc_cfi_split_body), false, 64, true, -48, -40);
  // Signing the return address moves no slot: the step strips it.
  ExpectStep(Addr(dc_cfi_signed_body), false, 16, true, -16, -8);
}

TEST(CfiRulesTest, CodeAddressStripsASignature) {
  // A signature in the bits above the 48-bit address space goes; an
  // unsigned address stays as it is.
  const uintptr_t pc = Addr(dc_cfi_probe_framed);
  EXPECT_EQ(CodeAddress(pc), pc);
  uintptr_t signed_pc = pc;
  asm volatile("mov x17, %0\n\tmov x16, sp\n\thint #12\n\tmov %0, x17"  // pacia1716
               : "+r"(signed_pc)
               :
               : "x16", "x17");
  EXPECT_EQ(CodeAddress(signed_pc), pc);
}

#endif

#if defined(__x86_64__) || defined(__aarch64__)

// Each ISA's probes above: a CFA from a DWARF expression, and an undefined
// return address.
TEST(CfiRulesTest, ExpressionIsUnsupportedAndUndefinedReturnEndsTheStack) {
  EXPECT_EQ(ComputeCfiRule(Addr(dc_cfi_expr_body)).kind,
            CfiRule::Kind::kUnsupported);
  EXPECT_EQ(ComputeCfiRule(Addr(dc_cfi_end_body)).kind, CfiRule::Kind::kEnd);
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
    EXPECT_EQ(rule.cfa_offset, kFramedCfaOffset);
    EXPECT_EQ(rule.saved_fp_offset, kFramedFpOffset);
    EXPECT_EQ(ReturnAddressOffset(rule), kFramedRaOffset);
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

#if defined(__aarch64__)
bool g_saw_signed_return_address = false;

// Code built with -mbranch-protection (Ubuntu's and Fedora's default) saves
// its return address signed; the walk strips the signatures, as libgcc does.
__attribute__((noinline, target("branch-protection=pac-ret"))) void SignedFrames(
    TwoCaptures* out, int depth) {
  const auto* record = static_cast<const uintptr_t*>(__builtin_frame_address(0));
  if (CodeAddress(record[1]) != record[1]) g_saw_signed_return_address = true;
  if (depth > 0) {
    SignedFrames(out, depth - 1);
  } else {
    CaptureBoth(out);
  }
  asm volatile("" ::: "memory");
}

TEST(CfiRulesTest, MatchesLibgccThroughSignedReturnAddresses) {
  TwoCaptures got;
  SignedFrames(&got, 3);
  ExpectSameStack(got);
  if (!g_saw_signed_return_address) GTEST_SKIP() << "no pointer authentication here";
}
#endif

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

TEST(CfiRulesTest, NotOfferedOffX86AndAArch64) {
  EXPECT_FALSE(CfiRulesSupported());
  EXPECT_FALSE(UnwinderAvailable(UnwinderKind::kCfiCache));
}

#endif

}  // namespace
}  // namespace deepcontext::native

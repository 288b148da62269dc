#include "tests/unit/runtime/native/no_frame_pointer_chain.h"

namespace native_chain {

namespace {

// Keeps a stack-allocated buffer alive across the call, so each frame holds
// data where a frame record would be, as in real code without one.
__attribute__((noinline)) void Touch(volatile uintptr_t* words, int n) {
  for (int i = 0; i < n; ++i) words[i] = static_cast<uintptr_t>(i) * 0x1111;
}

}  // namespace

// The empty asm after each call keeps it from becoming a tail call.
__attribute__((noinline)) int NoFpC(
    const deepcontext::native::Unwinder& unwinder, uintptr_t* pcs, int max) {
  volatile uintptr_t words[6];
  Touch(words, 6);
  const int n = unwinder.Capture(pcs, max, 0);
  asm volatile("" ::: "memory");
  return n + static_cast<int>(words[0]);
}

__attribute__((noinline)) int NoFpB(
    const deepcontext::native::Unwinder& unwinder, uintptr_t* pcs, int max) {
  volatile uintptr_t words[5];
  Touch(words, 5);
  const int n = NoFpC(unwinder, pcs, max);
  asm volatile("" ::: "memory");
  return n + static_cast<int>(words[0]);
}

__attribute__((noinline)) int NoFpA(
    const deepcontext::native::Unwinder& unwinder, uintptr_t* pcs, int max) {
  volatile uintptr_t words[7];
  Touch(words, 7);
  const int n = NoFpB(unwinder, pcs, max);
  asm volatile("" ::: "memory");
  return n + static_cast<int>(words[0]);
}

}  // namespace native_chain

#include "tests/unit/runtime/native/call_chain.h"

namespace native_chain {

// The empty asm after each call keeps the call from becoming a tail call
// (which would remove the caller's frame).
__attribute__((noinline)) int ChainC(const CaptureRequest& request,
                                     uintptr_t* pcs, int max) {
  const int n = request.unwinder != nullptr
                    ? request.unwinder->Capture(pcs, max, request.skip)
                    : deepcontext::native::CaptureNativeStack(pcs, max,
                                                              request.skip);
  asm volatile("" ::: "memory");
  return n;
}

__attribute__((noinline)) int ChainB(const CaptureRequest& request,
                                     uintptr_t* pcs, int max) {
  const int n = ChainC(request, pcs, max);
  asm volatile("" ::: "memory");
  return n;
}

__attribute__((noinline)) int ChainA(const CaptureRequest& request,
                                     uintptr_t* pcs, int max) {
  const int n = ChainB(request, pcs, max);
  asm volatile("" ::: "memory");
  return n;
}

__attribute__((noinline)) int CaptureAtDepth(
    const deepcontext::native::Unwinder& unwinder, int depth, uintptr_t* pcs,
    int max) {
  const int n = depth <= 1 ? unwinder.Capture(pcs, max, 0)
                           : CaptureAtDepth(unwinder, depth - 1, pcs, max);
  asm volatile("" ::: "memory");
  return n;
}

__attribute__((noinline)) void RunAtDepth(int depth, void (*fn)(void*),
                                          void* arg) {
  if (depth <= 1) {
    fn(arg);
  } else {
    RunAtDepth(depth - 1, fn, arg);
  }
  asm volatile("" ::: "memory");
}

}  // namespace native_chain

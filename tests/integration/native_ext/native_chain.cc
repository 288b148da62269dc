// Test extension: a known chain of native functions, a() -> b() -> c(),
// whose innermost function calls back into Python (a ctypes callback that
// runs a torch op). The op's native stack therefore holds the chain between
// the Python line that called into the extension and the callback's line.
//
// Built without inlining and without sibling calls so that every function
// keeps its own frame, and with -g so that file:line can be checked.

namespace native_chain {

using Callback = void (*)();

// Keeps a call from being the last instruction (no tail call) and the
// function from being folded with another one.
#define NATIVE_CHAIN_BARRIER() asm volatile("" ::: "memory")

__attribute__((noinline)) void c(Callback callback) {
  callback();  // C_CALL_LINE
  NATIVE_CHAIN_BARRIER();
}

__attribute__((noinline)) void b(Callback callback) {
  c(callback);  // B_CALL_LINE
  NATIVE_CHAIN_BARRIER();
}

__attribute__((noinline)) void a(Callback callback) {
  b(callback);  // A_CALL_LINE
  NATIVE_CHAIN_BARRIER();
}

}  // namespace native_chain

extern "C" __attribute__((visibility("default"), noinline)) void
native_chain_run(native_chain::Callback callback) {
  native_chain::a(callback);
  NATIVE_CHAIN_BARRIER();
}

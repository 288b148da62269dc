// A shared library that is stripped after linking: its internal functions
// have no symbol anywhere, which is what many vendor libraries look like.
#include <cstdint>

namespace {

__attribute__((noinline)) uintptr_t ReturnAddress() {
  asm volatile("" ::: "memory");
  return reinterpret_cast<uintptr_t>(__builtin_return_address(0));
}

__attribute__((noinline)) uintptr_t HiddenCaller() {
  const uintptr_t pc = ReturnAddress();
  asm volatile("" ::: "memory");
  return pc;
}

}  // namespace

// A return address inside a function that has no symbol in the library.
extern "C" __attribute__((visibility("default"))) uintptr_t
native_fixture_hidden_pc() {
  const uintptr_t pc = HiddenCaller();
  asm volatile("" ::: "memory");
  return pc;
}

// Where a libc function's code lies, for tests that symbolize it.
#pragma once

#include <dlfcn.h>

#include <cstdint>

namespace deepcontext::native::testing {

// An address inside libc's own definition of `name` (one past its first
// byte, as a return address would be), or 0 when libc has none. `&mmap`
// would give whatever the process binds the name to: under
// AddressSanitizer that is the sanitizer's interceptor, in libasan.
inline uintptr_t LibcPc(const char* name) {
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (libc == nullptr) return 0;
  void* function = dlsym(libc, name);
  dlclose(libc);
  return function == nullptr ? 0 : reinterpret_cast<uintptr_t>(function) + 1;
}

}  // namespace deepcontext::native::testing

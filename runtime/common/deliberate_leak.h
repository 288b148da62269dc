// Memory the runtime allocates and never frees on purpose: handles that
// must outlive every caller (NVTX never says when a handle is unused), and
// state abandoned in a forked child (destroying a mutex another thread held
// at the fork is undefined). Marking it keeps LeakSanitizer (`make asan`)
// from reporting it, and with it anything it points to; elsewhere this
// compiles to nothing.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace deepcontext {

inline void MarkDeliberatelyLeaked(const void* allocation) {
#if defined(__SANITIZE_ADDRESS__)
  __lsan_ignore_object(allocation);
#else
  (void)allocation;
#endif
}

}  // namespace deepcontext

// Asks for a cache line that is about to be written.
//
// The runtime's shared tables (correlation slots, forward links) are written
// by one thread and read or written next by another: the first access of
// the next insert then waits for the line to come back from the other
// core. Asking for the line of the entry the next event will use, while
// this event still works, hides that wait.
#pragma once

namespace deepcontext {

inline void PrefetchForWrite(const void* line) {
#if defined(__x86_64__)
  // prefetchw (exclusive, ready for the store); GCC emits only a read
  // prefetch for __builtin_prefetch(p, 1) without -mprfchw. Older x86
  // processors run it as a no-op. A prefetch never faults, whatever the
  // address.
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(line)));
#else
  __builtin_prefetch(line, 1, 3);
#endif
}

}  // namespace deepcontext

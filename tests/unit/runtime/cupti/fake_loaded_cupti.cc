// A library that calls itself libcupti.so (its SONAME) but has only
// cuptiGetVersion: loaded by a test before the loader runs, it shows which
// copy the loader takes (the one already in the process) by what the
// loader then finds missing.
#include <cstdint>

extern "C" __attribute__((visibility("default"))) int cuptiGetVersion(uint32_t* version) {
  *version = 130001;
  return 0;
}

// A chain of calls built WITHOUT frame pointers (-fomit-frame-pointer, see
// CMakeLists.txt): NoFpA -> NoFpB -> NoFpC, where NoFpC captures with the
// given unwinder. Code like this is common on aarch64, where distributions
// and wheels do not keep frame records, so the DWARF unwinders must see
// every link and the frame-pointer walker must stay safe.
#pragma once

#include <cstdint>

#include "runtime/native/native_stack.h"

namespace native_chain {

int NoFpA(const deepcontext::native::Unwinder& unwinder, uintptr_t* pcs,
          int max);
int NoFpB(const deepcontext::native::Unwinder& unwinder, uintptr_t* pcs,
          int max);
int NoFpC(const deepcontext::native::Unwinder& unwinder, uintptr_t* pcs,
          int max);

}  // namespace native_chain

#include "runtime/native/libgcc_walk.h"

#include <dlfcn.h>

namespace deepcontext::native::internal {
namespace {

// libgcc's unwinder, called directly (found with dlsym, as _Unwind_Find_FDE
// in cfi_rules.cc) where a capture inside an op must fall back to it: unlike
// backtrace() it can stop where the stack meets the anchor. Declared here,
// not from <unwind.h>, which libunwind's headers may replace. Reason codes
// are the Itanium C++ ABI's.
struct UnwindContext;  // libgcc's struct _Unwind_Context, opaque
using UnwindTraceFn = int (*)(UnwindContext*, void*);
using UnwindBacktraceFn = int (*)(UnwindTraceFn, void*);
using UnwindGetFn = uintptr_t (*)(UnwindContext*);
constexpr int kUnwindNoReason = 0;
constexpr int kUnwindEndOfStack = 5;

struct LibgccUnwinder {
  UnwindBacktraceFn backtrace = nullptr;
  UnwindGetFn get_ip = nullptr;
  UnwindGetFn get_cfa = nullptr;
};

const LibgccUnwinder& Libgcc() {
  static const LibgccUnwinder libgcc = [] {
    LibgccUnwinder found;
    found.backtrace = reinterpret_cast<UnwindBacktraceFn>(
        dlsym(RTLD_DEFAULT, "_Unwind_Backtrace"));
    found.get_ip = reinterpret_cast<UnwindGetFn>(dlsym(RTLD_DEFAULT, "_Unwind_GetIP"));
    found.get_cfa = reinterpret_cast<UnwindGetFn>(dlsym(RTLD_DEFAULT, "_Unwind_GetCFA"));
    return found;
  }();
  return libgcc;
}

struct LibgccWalk {
  const LibgccUnwinder* libgcc;
  void** out;
  int max;
  int n = 0;
  bool skipped_self = false;
  AnchorFrames* anchor;
  int next;
  int previous = -1;
};

int LibgccStep(UnwindContext* context, void* arg) {
  auto* walk = static_cast<LibgccWalk*>(arg);
  const uintptr_t pc = walk->libgcc->get_ip(context);
  // The stack address WalkCfiRules gives the frame of `pc`: its callee's
  // CFA, which is what libgcc's context holds while it stands at `pc`.
  const uintptr_t sp = walk->libgcc->get_cfa(context);
  if (!walk->skipped_self) {  // LibgccUntilAnchor itself, as backtrace() skips its own
    walk->skipped_self = true;
    return kUnwindNoReason;
  }
  if (pc == 0 || walk->n >= walk->max) return kUnwindEndOfStack;
  AnchorFrames* anchor = walk->anchor;
  if (sp != 0 && walk->next >= 0) {
    while (walk->next >= 0 && anchor->sps[walk->next] < sp) --walk->next;
    const int match = walk->next >= 0 && anchor->sps[walk->next] == sp &&
                              anchor->pcs[walk->next] == pc
                          ? walk->next
                          : -1;
    if (match >= 0 && walk->previous == match + 1) {  // as in WalkCfiRules
      anchor->met = walk->previous;
      --walk->n;
      return kUnwindEndOfStack;
    }
    walk->previous = match;
  }
  walk->out[walk->n++] = reinterpret_cast<void*>(pc);
  return kUnwindNoReason;
}

}  // namespace

__attribute__((noinline)) int LibgccUntilAnchor(void** out, int max,
                                                AnchorFrames* anchor) {
  const LibgccUnwinder& libgcc = Libgcc();
  if (libgcc.backtrace == nullptr || libgcc.get_ip == nullptr ||
      libgcc.get_cfa == nullptr) {
    return -1;
  }
  anchor->met = -1;
  LibgccWalk walk{&libgcc, out, max};
  walk.anchor = anchor;
  walk.next = anchor->count - 1;
  libgcc.backtrace(&LibgccStep, &walk);
  asm volatile("" ::: "memory");
  return walk.n;
}

}  // namespace deepcontext::native::internal

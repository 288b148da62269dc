// libdeepcontext.so has no code of its own: everything comes from the static
// libraries linked whole into it. This translation unit only gives the
// shared library target a source file and documents the exported surface:
// include/deepcontext/dlmonitor.h and include/deepcontext/profiler.h.
#include "deepcontext/dlmonitor.h"
#include "deepcontext/profiler.h"

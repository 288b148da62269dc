// deepcontext_xla_register_module: the Python package hands over each
// module JAX compiles (python/deepcontext/_jax_hook.py).
#include <string_view>

#include "deepcontext/profiler.h"
#include "runtime/xla/hlo_sources.h"

extern "C" DEEPCONTEXT_API int deepcontext_xla_register_module(const char* hlo_text,
                                                               size_t length) {
  if (hlo_text == nullptr) return 0;
  try {
    deepcontext::xla::HloSources sources =
        deepcontext::xla::ParseHloSources(std::string_view(hlo_text, length));
    const int count = static_cast<int>(sources.frames.size());
    deepcontext::xla::HloSourceRegistry::Global().Add(std::move(sources));
    return count;
  } catch (...) {
    return 0;  // out of memory: the module stays without lines
  }
}

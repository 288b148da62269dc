#include "format/fast_inflate.h"

#include <dlfcn.h>

#include <atomic>

#if __has_include(<libdeflate.h>)
#include <libdeflate.h>
#define DEEPCONTEXT_HAVE_LIBDEFLATE_H 1
#endif

namespace deepcontext::format {
namespace {

// The three entry points used, declared here because only the shared
// library (soname libdeflate.so.0, a stable ABI) is needed at run time.
using AllocFn = void* (*)();
using DecompressFn = int (*)(void* decompressor, const void* in,
                             size_t in_nbytes, void* out,
                             size_t out_nbytes_avail, size_t* actual_in,
                             size_t* actual_out);
using FreeFn = void (*)(void* decompressor);
constexpr int kSuccess = 0;  // LIBDEFLATE_SUCCESS

#ifdef DEEPCONTEXT_HAVE_LIBDEFLATE_H
// Where the header is at hand, it vouches for the declarations above.
static_assert(LIBDEFLATE_SUCCESS == kSuccess);
static_assert(sizeof(enum libdeflate_result) == sizeof(int));
#endif

struct Api {
  AllocFn alloc = nullptr;
  DecompressFn decompress = nullptr;
  FreeFn free = nullptr;
};

// Loads libdeflate once; null when the system lacks it.
const Api* LoadApi() {
  static const Api* const api = []() -> const Api* {
    void* library = dlopen("libdeflate.so.0", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) return nullptr;
    static Api loaded;
    loaded.alloc = reinterpret_cast<AllocFn>(
        dlsym(library, "libdeflate_alloc_decompressor"));
    loaded.decompress = reinterpret_cast<DecompressFn>(
        dlsym(library, "libdeflate_zlib_decompress_ex"));
    loaded.free = reinterpret_cast<FreeFn>(
        dlsym(library, "libdeflate_free_decompressor"));
    if (loaded.alloc == nullptr || loaded.decompress == nullptr ||
        loaded.free == nullptr) {
      dlclose(library);
      return nullptr;
    }
    return &loaded;
  }();
  return api;
}

std::atomic<bool> enabled{true};

}  // namespace

bool FastInflate(std::string_view input, char* out, size_t out_size) {
  if (!enabled.load(std::memory_order_relaxed)) return false;
  const Api* api = LoadApi();
  if (api == nullptr) return false;
  void* decompressor = api->alloc();
  if (decompressor == nullptr) return false;
  size_t used = 0;
  size_t made = 0;
  const int result = api->decompress(decompressor, input.data(), input.size(),
                                     out, out_size, &used, &made);
  api->free(decompressor);
  // Bytes after the stream, or a stream shorter than the header says, are
  // errors here as in the zlib path.
  return result == kSuccess && used == input.size() && made == out_size;
}

bool EnableFastInflate(bool enable) {
  enabled.store(enable, std::memory_order_relaxed);
  return LoadApi() != nullptr;
}

}  // namespace deepcontext::format

// Whole-buffer zlib decompression with libdeflate, about twice as fast as
// zlib's inflate on a profile's payload. libdeflate is loaded at run time
// when the system has it (Debian's libdeflate0), so neither the injected
// runtime, which shares this library but never reads profiles, nor a
// machine without it needs it. Internal to format/.
#pragma once

#include <cstddef>
#include <string_view>

namespace deepcontext::format {

// Decompresses input, which must be exactly one zlib stream (Adler-32
// checked) producing exactly out_size bytes, into out. Returns false when
// libdeflate is unavailable or turned off, or when input is not such a
// stream; out is then unspecified and the caller decompresses with zlib,
// which names the problem. Never throws.
bool FastInflate(std::string_view input, char* out, size_t out_size);

// Turns FastInflate on or off (it starts on), so that tests can compare the
// two paths. Returns whether libdeflate could be loaded.
bool EnableFastInflate(bool enable);

}  // namespace deepcontext::format

// The outer layer of a .dctx file: fixed header, checksums and compression
// around an opaque payload (docs/FORMAT.md, "Header"). Internal to format/;
// exposed for dctx_file.cc and for tests that craft unusual files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "format/payload_buffer.h"

namespace deepcontext::format {

// "DCTX" then bytes that text-mode or 7-bit transfers would alter: 0x89 (high
// bit), CR LF (line-ending conversion either way) and a lone LF.
inline constexpr std::string_view kDctxMagic{"DCTX\x89\r\n\n", 8};
// A major bump means old readers cannot read the file; a minor bump only adds
// things old readers may skip.
inline constexpr uint16_t kFormatMajor = 1;
inline constexpr uint16_t kFormatMinor = 1;
inline constexpr size_t kHeaderSize = 40;
// Readers refuse payloads larger than this before allocating for them.
inline constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 32;
// Largest file a reader loads: a header plus a payload of kMaxPayloadBytes
// that deflate could not shrink (stored blocks add 5 bytes per 64 KiB).
inline constexpr uint64_t kMaxFileBytes =
    kHeaderSize + kMaxPayloadBytes + (kMaxPayloadBytes >> 10);

// The complete file bytes: header (claiming format major.minor) plus payload
// compressed with zlib, or an error when zlib fails. May throw
// std::bad_alloc.
StatusOr<std::string> WrapPayload(std::string_view payload, uint16_t major,
                                  uint16_t minor);

// Checks the header and checksums of file, then decompresses the payload into
// *payload. An error is a one-line problem description without a path
// ("checksum mismatch (file corrupt)"). May throw std::bad_alloc.
Status UnwrapPayload(std::string_view file, std::string* payload);
// The same, into a buffer whose consumed pages the decoder can give back.
Status UnwrapPayload(std::string_view file, PayloadBuffer* payload);

}  // namespace deepcontext::format

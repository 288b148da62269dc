#include "format/dctx_container.h"

#include <zlib.h>

#include <algorithm>
#include <utility>

#include "format/byte_buffer.h"
#include "format/fast_inflate.h"

namespace deepcontext::format {
namespace {

// Byte offsets of the header fields; docs/FORMAT.md has the same table.
constexpr size_t kVersionEnd = 12;       // magic + major + minor
constexpr size_t kHeaderCrcOffset = 36;  // CRC32 of bytes [0, 36)
// Deflate cannot expand data by more than about 1032:1, so a header claiming
// more is corrupt; checking it first bounds the allocation by the file size.
constexpr uint64_t kMaxDeflateRatio = 1032;
// Fuzzing builds accept any checksum so that mutated inputs reach the payload
// decoder; the macro is the convention libFuzzer and OSS-Fuzz use.
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
constexpr bool kVerifyChecksums = false;
#else
constexpr bool kVerifyChecksums = true;
#endif
// zlib's length arguments are 32-bit (uInt); feed it bounded chunks.
constexpr size_t kZlibChunk = size_t{1} << 30;

uint32_t Crc32(std::string_view bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (!bytes.empty()) {
    const size_t n = std::min(bytes.size(), kZlibChunk);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data()),
                static_cast<uInt>(n));
    bytes.remove_prefix(n);
  }
  return static_cast<uint32_t>(crc);
}

// Releases a zlib stream's state on every path out of a scope, including a
// std::bad_alloc thrown while building an error message.
class StreamEnder {
 public:
  StreamEnder(z_stream* stream, int (*end)(z_stream*))
      : stream_(stream), end_(end) {}
  ~StreamEnder() { end_(stream_); }
  StreamEnder(const StreamEnder&) = delete;
  StreamEnder& operator=(const StreamEnder&) = delete;

 private:
  z_stream* stream_;
  int (*end_)(z_stream*);
};

// Compresses input into *out. Returns false on zlib failure.
bool Deflate(std::string_view input, std::string* out) {
  // compressBound is deflateBound for the default parameters; sizing the
  // buffer before deflateInit means no allocation can fail with zlib state
  // held.
  out->resize(compressBound(static_cast<uLong>(input.size())));
  z_stream stream{};
  if (deflateInit(&stream, Z_DEFAULT_COMPRESSION) != Z_OK) return false;
  const StreamEnder ender(&stream, deflateEnd);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  stream.next_out = reinterpret_cast<Bytef*>(out->data());
  size_t in_left = input.size();
  size_t out_left = out->size();
  int ret = Z_OK;
  while (ret == Z_OK) {
    // Refill only when zlib has used up the previous chunk.
    if (stream.avail_in == 0) {
      stream.avail_in = static_cast<uInt>(std::min(in_left, kZlibChunk));
      in_left -= stream.avail_in;
    }
    if (stream.avail_out == 0) {
      stream.avail_out = static_cast<uInt>(std::min(out_left, kZlibChunk));
      out_left -= stream.avail_out;
    }
    ret = deflate(&stream, in_left == 0 ? Z_FINISH : Z_NO_FLUSH);
  }
  if (ret != Z_STREAM_END) return false;
  out->resize(out->size() - out_left - stream.avail_out);
  return true;
}

// Decompresses input, which must be exactly one zlib stream producing exactly
// out_size bytes, into out.
Status Inflate(std::string_view input, char* out, size_t out_size) {
  if (FastInflate(input, out, out_size)) return Status::Ok();
  // Without libdeflate, or when the stream is damaged: zlib, whose messages
  // say what is wrong.
  z_stream stream{};
  if (inflateInit(&stream) != Z_OK)
    return Status::Error("cannot initialize zlib");
  const StreamEnder ender(&stream, inflateEnd);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  stream.next_out = reinterpret_cast<Bytef*>(out);
  size_t in_left = input.size();
  size_t out_left = out_size;
  std::string problem;
  while (true) {
    if (stream.avail_in == 0) {
      stream.avail_in = static_cast<uInt>(std::min(in_left, kZlibChunk));
      in_left -= stream.avail_in;
    }
    if (stream.avail_out == 0) {
      stream.avail_out = static_cast<uInt>(std::min(out_left, kZlibChunk));
      out_left -= stream.avail_out;
    }
    const int ret = inflate(&stream, Z_NO_FLUSH);
    if (ret == Z_STREAM_END) break;
    if (ret == Z_OK) continue;
    // Z_BUF_ERROR: no progress possible, because input or output ran out.
    if (ret == Z_BUF_ERROR && stream.avail_in == 0 && in_left == 0) {
      problem = "corrupt payload (compressed stream ends early)";
    } else if (ret == Z_BUF_ERROR) {
      problem = "corrupt payload (larger than the header says)";
    } else if (ret == Z_MEM_ERROR) {
      problem = "out of memory";
    } else {
      problem = std::string("corrupt compressed payload (") +
                (stream.msg != nullptr ? stream.msg : "zlib error") + ")";
    }
    break;
  }
  if (problem.empty() && (stream.avail_out != 0 || out_left != 0)) {
    problem = "corrupt payload (smaller than the header says)";
  }
  if (problem.empty() && (stream.avail_in != 0 || in_left != 0)) {
    problem = "corrupt payload (bytes after the compressed stream)";
  }
  if (!problem.empty()) return Status::Error(std::move(problem));
  return Status::Ok();
}

Status CheckMagic(std::string_view file) {
  const size_t n = std::min(file.size(), kDctxMagic.size());
  if (file.substr(0, n) == kDctxMagic.substr(0, n)) return Status::Ok();
  if (n > 4 && file.substr(0, 4) == kDctxMagic.substr(0, 4)) {
    return Status::Error(
        "not a DeepContext profile (bad magic; damaged by a text-mode "
        "transfer?)");
  }
  return Status::Error("not a DeepContext profile (bad magic)");
}

}  // namespace

StatusOr<std::string> WrapPayload(std::string_view payload, uint16_t major,
                                  uint16_t minor) {
  std::string compressed;
  if (!Deflate(payload, &compressed))
    return Status::Error("compression failed");
  std::string file;
  file.reserve(kHeaderSize + compressed.size());
  ByteWriter writer(&file);
  writer.PutBytes(kDctxMagic);
  writer.PutFixed16(major);
  writer.PutFixed16(minor);
  writer.PutFixed32(0);  // flags: none defined in 1.x
  writer.PutFixed64(compressed.size());
  writer.PutFixed64(payload.size());
  writer.PutFixed32(Crc32(compressed));
  writer.PutFixed32(Crc32(file));
  writer.PutBytes(compressed);
  return file;
}

namespace {

// Checks everything about file but the compressed stream itself. Gives the
// stream and its decompressed size, or the problem.
Status CheckContainer(std::string_view file, std::string_view* stream,
                      size_t* stream_size) {
  if (file.empty()) return Status::Error("empty file");
  if (Status magic = CheckMagic(file); !magic.ok()) return magic;
  ByteReader reader(file);
  std::string_view magic;
  uint16_t major = 0;
  uint16_t minor = 0;
  // The version is checked before the header length or checksum so that a
  // newer major version, which may lay out its header differently, is named.
  if (file.size() >= kVersionEnd) {
    reader.ReadBytes(kDctxMagic.size(), &magic);
    reader.ReadFixed16(&major);
    reader.ReadFixed16(&minor);
    if (major > kFormatMajor) {
      return Status::Error(
          "written by a newer DeepContext (format " + std::to_string(major) +
          ".x); this reader supports " + std::to_string(kFormatMajor) + ".x");
    }
    if (major < kFormatMajor) {
      return Status::Error("unsupported format version " +
                           std::to_string(major) + "." + std::to_string(minor));
    }
  }
  if (file.size() < kHeaderSize) {
    return Status::Error(
        "truncated file (expected at least " + std::to_string(kHeaderSize) +
        " bytes of header, found " + std::to_string(file.size()) + ")");
  }
  uint32_t flags = 0;
  uint64_t compressed_size = 0;
  uint64_t payload_size = 0;
  uint32_t payload_crc = 0;
  uint32_t header_crc = 0;
  reader.ReadFixed32(&flags);  // no flags are defined in 1.x; ignored
  reader.ReadFixed64(&compressed_size);
  reader.ReadFixed64(&payload_size);
  reader.ReadFixed32(&payload_crc);
  reader.ReadFixed32(&header_crc);
  if (kVerifyChecksums &&
      header_crc != Crc32(file.substr(0, kHeaderCrcOffset))) {
    return Status::Error("header checksum mismatch (file corrupt)");
  }
  const uint64_t found = file.size() - kHeaderSize;
  if (found < compressed_size) {
    return Status::Error(
        "truncated file (expected " + std::to_string(compressed_size) +
        " bytes of payload, found " + std::to_string(found) + ")");
  }
  if (found > compressed_size) {
    return Status::Error("trailing garbage after the payload (" +
                         std::to_string(found - compressed_size) +
                         " bytes; file corrupt)");
  }
  const std::string_view compressed = file.substr(kHeaderSize);
  if (kVerifyChecksums && payload_crc != Crc32(compressed)) {
    return Status::Error("checksum mismatch (file corrupt)");
  }
  if (payload_size > kMaxPayloadBytes) {
    return Status::Error("payload of " + std::to_string(payload_size) +
                         " bytes is larger than this reader's limit of " +
                         std::to_string(kMaxPayloadBytes) + " bytes");
  }
  if (payload_size > compressed_size * kMaxDeflateRatio) {
    return Status::Error("corrupt header (uncompressed size " +
                         std::to_string(payload_size) + " is implausible for " +
                         std::to_string(compressed_size) +
                         " compressed bytes)");
  }
  *stream = compressed;
  *stream_size = static_cast<size_t>(payload_size);
  return Status::Ok();
}

}  // namespace

Status UnwrapPayload(std::string_view file, std::string* payload) {
  std::string_view compressed;
  size_t size = 0;
  if (Status checked = CheckContainer(file, &compressed, &size);
      !checked.ok()) {
    return checked;
  }
  payload->assign(size, '\0');
  return Inflate(compressed, payload->data(), size);
}

Status UnwrapPayload(std::string_view file, PayloadBuffer* payload) {
  std::string_view compressed;
  size_t size = 0;
  if (Status checked = CheckContainer(file, &compressed, &size);
      !checked.ok()) {
    return checked;
  }
  if (!payload->Allocate(size)) return Status::Error("out of memory");
  return Inflate(compressed, payload->data(), size);
}

}  // namespace deepcontext::format

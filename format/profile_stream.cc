#include "format/profile_stream.h"

#include <zlib.h>

#include <algorithm>
#include <new>
#include <utility>

#include "format/byte_buffer.h"
#include "format/dctx_container.h"
#include "format/file_io.h"
#include "format/payload_codec.h"

namespace deepcontext::format {
namespace {

// Compressed bytes are written to the file in pieces of this size.
constexpr size_t kOutputChunk = size_t{1} << 18;
// zlib's length arguments are 32-bit (uInt); input is fed in bounded chunks.
constexpr size_t kInputChunk = size_t{1} << 30;

}  // namespace

void SectionBody::AddMetadata(std::string_view key, std::string_view value) {
  ByteWriter out(&records_);
  PutMetadataEntry(key, value, &out);
  ++count_;
}

void SectionBody::AddString(std::string_view text) {
  ByteWriter(&records_).PutString(text);
  ++count_;
}

void SectionBody::AddNode(const Node& node) {
  ByteWriter out(&records_);
  PutNodeRecord(node, &out);
  ++count_;
}

void SectionBody::AddMetric(const MetricDescriptor& metric) {
  ByteWriter out(&records_);
  PutMetricRecord(metric, &out);
  ++count_;
}

void SectionBody::AddValue(const MetricValue& value) {
  ByteWriter out(&records_);
  PutValueRecord(value, &out);
  ++count_;
}

struct ProfileStreamWriter::State {
  std::string path;
  AtomicFile file;
  z_stream stream{};
  bool stream_open = false;
  Status failure;  // the first error; later calls repeat it
  uint64_t payload_size = 0;
  uint64_t compressed_size = 0;
  uLong payload_crc = crc32(0L, Z_NULL, 0);
  std::string out = std::string(kOutputChunk, '\0');

  ~State() {
    if (stream_open) deflateEnd(&stream);
  }

  // Feeds input to deflate (flush: Z_NO_FLUSH or Z_FINISH) and writes what
  // comes out. Returns false (with failure set) on any failure.
  bool Deflate(std::string_view input, int flush) {
    while (true) {
      const size_t n = std::min(input.size(), kInputChunk);
      stream.next_in =
          reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
      stream.avail_in = static_cast<uInt>(n);
      const bool last_piece = n == input.size();
      const int mode = last_piece ? flush : Z_NO_FLUSH;
      int ret = Z_OK;
      do {
        stream.next_out = reinterpret_cast<Bytef*>(out.data());
        stream.avail_out = static_cast<uInt>(out.size());
        ret = deflate(&stream, mode);
        if (ret == Z_STREAM_ERROR) {
          failure = Status::Error("compression failed");
          return false;
        }
        const size_t produced = out.size() - stream.avail_out;
        if (produced > 0) {
          const std::string_view bytes(out.data(), produced);
          payload_crc =
              crc32(payload_crc, reinterpret_cast<const Bytef*>(bytes.data()),
                    static_cast<uInt>(produced));
          compressed_size += produced;
          failure = file.Append(bytes);
          if (!failure.ok()) return false;
        }
      } while (stream.avail_out == 0 ||
               (mode == Z_FINISH && ret != Z_STREAM_END));
      input.remove_prefix(n);
      if (last_piece) return true;
    }
  }
};

ProfileStreamWriter::ProfileStreamWriter() = default;
ProfileStreamWriter::~ProfileStreamWriter() = default;

Status ProfileStreamWriter::Failed(std::string problem) {
  state_->failure = Status::Error(std::move(problem));
  return state_->failure;
}

Status ProfileStreamWriter::Begin(const std::string& path) {
  try {
    state_ = std::make_unique<State>();
    state_->path = path;
    if (path.empty()) return Failed("(empty path): no file name given");
    Status created = state_->file.Create(path);
    if (created.ok()) {
      // Room for the header, written by Finish.
      created = state_->file.Append(std::string(kHeaderSize, '\0'));
    }
    if (!created.ok()) return Failed(path + ": " + created.message());
    if (deflateInit(&state_->stream, Z_DEFAULT_COMPRESSION) != Z_OK) {
      return Failed(path + ": compression failed");
    }
    state_->stream_open = true;
    return Status::Ok();
  } catch (const std::bad_alloc&) {
    return Status::Error("out of memory");
  }
}

Status ProfileStreamWriter::AddSection(uint64_t tag, const SectionBody& body) {
  if (state_ == nullptr) return Status::Error("profile writer not started");
  if (!state_->failure.ok()) return state_->failure;
  try {
    std::string count;
    ByteWriter(&count).PutVarint(body.count());
    std::string header;
    ByteWriter writer(&header);
    writer.PutVarint(tag);
    writer.PutVarint(count.size() + body.records().size());
    header += count;
    for (std::string_view piece :
         {std::string_view(header), std::string_view(body.records())}) {
      if (!state_->Deflate(piece, Z_NO_FLUSH)) {
        return Failed(state_->path + ": " + state_->failure.message());
      }
      state_->payload_size += piece.size();
    }
    return Status::Ok();
  } catch (const std::bad_alloc&) {
    return Failed("out of memory");
  }
}

Status ProfileStreamWriter::AddMetadata(const SectionBody& body) {
  return AddSection(static_cast<uint64_t>(SectionTag::kMetadata), body);
}
Status ProfileStreamWriter::AddStrings(const SectionBody& body) {
  return AddSection(static_cast<uint64_t>(SectionTag::kStrings), body);
}
Status ProfileStreamWriter::AddNodes(const SectionBody& body) {
  return AddSection(static_cast<uint64_t>(SectionTag::kNodes), body);
}
Status ProfileStreamWriter::AddMetrics(const SectionBody& body) {
  return AddSection(static_cast<uint64_t>(SectionTag::kMetrics), body);
}
Status ProfileStreamWriter::AddValues(const SectionBody& body) {
  return AddSection(static_cast<uint64_t>(SectionTag::kValues), body);
}

Status ProfileStreamWriter::Finish() {
  if (state_ == nullptr) return Status::Error("profile writer not started");
  if (!state_->failure.ok()) return state_->failure;
  try {
    State& s = *state_;
    if (!s.Deflate({}, Z_FINISH))
      return Failed(s.path + ": " + s.failure.message());
    std::string header;
    header.reserve(kHeaderSize);
    ByteWriter writer(&header);
    writer.PutBytes(kDctxMagic);
    writer.PutFixed16(kFormatMajor);
    writer.PutFixed16(kFormatMinor);
    writer.PutFixed32(0);  // flags: none defined in 1.x
    writer.PutFixed64(s.compressed_size);
    writer.PutFixed64(s.payload_size);
    writer.PutFixed32(static_cast<uint32_t>(s.payload_crc));
    writer.PutFixed32(static_cast<uint32_t>(crc32(
        crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(header.data()),
        static_cast<uInt>(header.size()))));
    Status written = s.file.WriteAt(0, header);
    if (written.ok()) written = s.file.Commit();
    if (!written.ok()) return Failed(s.path + ": " + written.message());
    return Status::Ok();
  } catch (const std::bad_alloc&) {
    return Failed("out of memory");
  }
}

}  // namespace deepcontext::format

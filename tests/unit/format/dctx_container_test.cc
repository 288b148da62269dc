#include "format/dctx_container.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <string>

#include "format/byte_buffer.h"
#include "tests/unit/format/format_test_util.h"

namespace deepcontext::format {
namespace {

// Header field offsets as documented in docs/FORMAT.md.
constexpr size_t kMajorAt = 8;
constexpr size_t kMinorAt = 10;
constexpr size_t kFlagsAt = 12;
constexpr size_t kCompressedSizeAt = 16;
constexpr size_t kPayloadSizeAt = 24;
constexpr size_t kPayloadCrcAt = 32;
constexpr size_t kHeaderCrcAt = 36;

uint32_t Crc(const std::string& bytes) {
  return static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(bytes.data()),
            static_cast<uInt>(bytes.size())));
}

uint64_t Field(const std::string& file, size_t at, int width) {
  uint64_t value = 0;
  for (int i = 0; i < width; ++i) {
    value |= uint64_t{static_cast<uint8_t>(file[at + i])} << (8 * i);
  }
  return value;
}

void SetField(std::string* file, size_t at, int width, uint64_t value) {
  for (int i = 0; i < width; ++i) {
    (*file)[at + i] = static_cast<char>(value >> (8 * i));
  }
}

// Recomputes both checksums so that only the deliberate change remains.
void Reseal(std::string* file) {
  SetField(file, kPayloadCrcAt, 4, Crc(file->substr(kHeaderSize)));
  SetField(file, kHeaderCrcAt, 4, Crc(file->substr(0, kHeaderCrcAt)));
}

// The error unwrapping file gives; "" when it unwraps.
std::string Unwrap(const std::string& file) {
  std::string payload;
  return UnwrapPayload(file, &payload).message();
}

const std::string kPayload = "some payload bytes, some payload bytes";

TEST(DctxContainer, HeaderLayoutMatchesTheDocumentation) {
  const std::string file = Wrap(kPayload, 1, 3);
  ASSERT_GT(file.size(), kHeaderSize);
  EXPECT_EQ(file.substr(0, 8), std::string("DCTX\x89\x0d\x0a\x0a", 8));
  EXPECT_EQ(Field(file, kMajorAt, 2), 1u);
  EXPECT_EQ(Field(file, kMinorAt, 2), 3u);
  EXPECT_EQ(Field(file, kFlagsAt, 4), 0u);
  EXPECT_EQ(Field(file, kCompressedSizeAt, 8), file.size() - kHeaderSize);
  EXPECT_EQ(Field(file, kPayloadSizeAt, 8), kPayload.size());
  EXPECT_EQ(Field(file, kPayloadCrcAt, 4), Crc(file.substr(kHeaderSize)));
  EXPECT_EQ(Field(file, kHeaderCrcAt, 4), Crc(file.substr(0, kHeaderCrcAt)));
  // The payload is a plain zlib stream.
  std::string inflated(kPayload.size(), '\0');
  uLongf inflated_size = inflated.size();
  const std::string compressed = file.substr(kHeaderSize);
  ASSERT_EQ(
      uncompress(reinterpret_cast<Bytef*>(inflated.data()), &inflated_size,
                 reinterpret_cast<const Bytef*>(compressed.data()),
                 compressed.size()),
      Z_OK);
  EXPECT_EQ(inflated, kPayload);
}

TEST(DctxContainer, RoundTrips) {
  for (const std::string& payload :
       {std::string(), kPayload, std::string(1 << 20, 'z')}) {
    std::string out = "junk";
    const Status unwrapped = UnwrapPayload(Wrap(payload, 1, 0), &out);
    ASSERT_TRUE(unwrapped.ok()) << unwrapped.message();
    EXPECT_EQ(out, payload);
  }
}

TEST(DctxContainer, NewerMinorAndUnknownFlagsAreAccepted) {
  std::string file = Wrap(kPayload, 1, 65535);
  SetField(&file, kFlagsAt, 4, 0xdeadbeef);
  Reseal(&file);
  std::string out;
  EXPECT_TRUE(UnwrapPayload(file, &out).ok());
  EXPECT_EQ(out, kPayload);
}

TEST(DctxContainer, VersionChecks) {
  EXPECT_EQ(Unwrap(Wrap(kPayload, 2, 0)),
            "written by a newer DeepContext (format 2.x); this reader "
            "supports 1.x");
  EXPECT_EQ(Unwrap(Wrap(kPayload, 65535, 9)),
            "written by a newer DeepContext (format 65535.x); this reader "
            "supports 1.x");
  // Named even when the rest of a newer header is missing.
  EXPECT_EQ(Unwrap(Wrap(kPayload, 3, 0).substr(0, 12)),
            "written by a newer DeepContext (format 3.x); this reader "
            "supports 1.x");
  EXPECT_EQ(Unwrap(Wrap(kPayload, 0, 7)),
            "unsupported format version 0.7");
}

TEST(DctxContainer, HeaderChecksumCoversEveryHeaderField) {
  for (size_t at :
       {kFlagsAt, kCompressedSizeAt, kPayloadSizeAt, kPayloadCrcAt, kMinorAt}) {
    std::string file = Wrap(kPayload, 1, 0);
    file[at] ^= 0x40;
    EXPECT_EQ(Unwrap(file), "header checksum mismatch (file corrupt)") << at;
  }
}

TEST(DctxContainer, PayloadChecksum) {
  std::string file = Wrap(kPayload, 1, 0);
  file.back() ^= 1;
  EXPECT_EQ(Unwrap(file), "checksum mismatch (file corrupt)");
}

TEST(DctxContainer, SizeMismatches) {
  const std::string file = Wrap(kPayload, 1, 0);
  const size_t compressed = file.size() - kHeaderSize;
  EXPECT_EQ(Unwrap(file.substr(0, file.size() - 3)),
            "truncated file (expected " + std::to_string(compressed) +
                " bytes of payload, found " + std::to_string(compressed - 3) +
                ")");
  EXPECT_EQ(Unwrap(file + "ab"),
            "trailing garbage after the payload (2 bytes; file corrupt)");
  EXPECT_EQ(Unwrap(file.substr(0, 39)),
            "truncated file (expected at least 40 bytes of header, found 39)");
}

TEST(DctxContainer, UncompressedSizeMustMatchTheHeader) {
  std::string file = Wrap(kPayload, 1, 0);
  SetField(&file, kPayloadSizeAt, 8, kPayload.size() + 1);
  Reseal(&file);
  EXPECT_EQ(Unwrap(file), "corrupt payload (smaller than the header says)");
  SetField(&file, kPayloadSizeAt, 8, kPayload.size() - 1);
  Reseal(&file);
  EXPECT_EQ(Unwrap(file), "corrupt payload (larger than the header says)");
}

TEST(DctxContainer, ImplausibleSizesAreRejectedBeforeAllocating) {
  std::string file = Wrap(kPayload, 1, 0);
  const uint64_t compressed = file.size() - kHeaderSize;
  const uint64_t claimed = compressed * 1032 + 1;
  SetField(&file, kPayloadSizeAt, 8, claimed);
  Reseal(&file);
  EXPECT_EQ(Unwrap(file),
            "corrupt header (uncompressed size " + std::to_string(claimed) +
                " is implausible for " + std::to_string(compressed) +
                " compressed bytes)");
}

TEST(DctxContainer, PayloadsOverTheCeilingAreRejectedBeforeAllocating) {
  std::string file = Wrap(kPayload, 1, 0);
  for (uint64_t claimed : {kMaxPayloadBytes + 1, UINT64_MAX}) {
    SetField(&file, kPayloadSizeAt, 8, claimed);
    Reseal(&file);
    EXPECT_EQ(Unwrap(file), "payload of " + std::to_string(claimed) +
                                " bytes is larger than this reader's limit "
                                "of 4294967296 bytes");
  }
}

TEST(DctxContainer, CompressedStreamMustFillThePayload) {
  std::string file = Wrap(kPayload, 1, 0) + "xyz";
  SetField(&file, kCompressedSizeAt, 8, file.size() - kHeaderSize);
  Reseal(&file);
  EXPECT_EQ(Unwrap(file),
            "corrupt payload (bytes after the compressed stream)");

  file = Wrap(kPayload, 1, 0);
  file.resize(file.size() - 4);  // drop the zlib trailer
  SetField(&file, kCompressedSizeAt, 8, file.size() - kHeaderSize);
  Reseal(&file);
  EXPECT_EQ(Unwrap(file), "corrupt payload (compressed stream ends early)");
}

TEST(DctxContainer, NonZlibPayloadIsRejected) {
  std::string file = Wrap(kPayload, 1, 0);
  for (size_t i = kHeaderSize; i < file.size(); ++i) file[i] = 'Q';
  Reseal(&file);
  const std::string problem = Unwrap(file);
  EXPECT_EQ(problem.rfind("corrupt compressed payload (", 0), 0u) << problem;
}

TEST(DctxContainer, MagicChecks) {
  EXPECT_EQ(Unwrap(""), "empty file");
  EXPECT_EQ(Unwrap("DCTZ"), "not a DeepContext profile (bad magic)");
  EXPECT_EQ(Unwrap("\x89PNG\r\n\x1a\n"),
            "not a DeepContext profile (bad magic)");
  // A prefix of the magic is a truncated profile, not a foreign file.
  EXPECT_EQ(Unwrap("DCTX\x89"),
            "truncated file (expected at least 40 bytes of header, found 5)");
  // LF -> CRLF conversion, as a text-mode transfer would do.
  EXPECT_EQ(Unwrap("DCTX\x89\r\r\n\r\n"),
            "not a DeepContext profile (bad magic; damaged by a text-mode "
            "transfer?)");
  // 7-bit transfer stripping the high bit.
  EXPECT_EQ(Unwrap(std::string("DCTX\x09\r\n\n", 8)),
            "not a DeepContext profile (bad magic; damaged by a text-mode "
            "transfer?)");
}

}  // namespace
}  // namespace deepcontext::format

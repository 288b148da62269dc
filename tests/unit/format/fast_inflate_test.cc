#include "format/fast_inflate.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <string_view>

#include "format/dctx_container.h"
#include "tests/unit/format/format_test_util.h"

namespace deepcontext::format {
namespace {

// A payload that compresses (repeats) yet spans many deflate blocks.
std::string SamplePayload() {
  std::string payload;
  for (uint32_t i = 0; payload.size() < (1u << 20); ++i) {
    payload += "node " + std::to_string(i % 5000) + " line " +
               std::to_string(i * 2654435761u % 977) + '\n';
    payload.push_back(static_cast<char>(i & 0xff));
  }
  return payload;
}

// Restores the default (libdeflate on) whatever a test does.
class FastInflateTest : public ::testing::Test {
 protected:
  void TearDown() override { EnableFastInflate(true); }
};

TEST_F(FastInflateTest, DecompressesExactlyWhatZlibWrote) {
  if (!EnableFastInflate(true)) GTEST_SKIP() << "libdeflate.so.0 not found";
  const std::string payload = SamplePayload();
  const std::string file = Wrap(payload, 1, 0);
  ASSERT_FALSE(file.empty());
  const std::string compressed = file.substr(kHeaderSize);
  std::string out(payload.size(), '\0');
  ASSERT_TRUE(FastInflate(compressed, out.data(), out.size()));
  EXPECT_EQ(out, payload);

  // Anything but exactly one stream of exactly the size asked for is left
  // to zlib, which names the problem.
  std::string longer(payload.size() + 1, '\0');
  EXPECT_FALSE(FastInflate(compressed, longer.data(), longer.size()));
  EXPECT_FALSE(FastInflate(compressed, out.data(), out.size() - 1));
  EXPECT_FALSE(FastInflate(compressed + "x", out.data(), out.size()));
  EXPECT_FALSE(FastInflate(compressed.substr(0, compressed.size() - 4),
                           out.data(), out.size()));
  std::string damaged = compressed;
  damaged[damaged.size() - 1] ^= 1;  // the Adler-32 trailer
  EXPECT_FALSE(FastInflate(damaged, out.data(), out.size()));

  EnableFastInflate(false);
  EXPECT_FALSE(FastInflate(compressed, out.data(), out.size()));
}

// Sets the header's CRC fields (docs/FORMAT.md) to match the file's bytes,
// so that only the damage done to the stream remains.
void Reseal(std::string* file) {
  auto put = [&](size_t at, uLong crc) {
    for (int i = 0; i < 4; ++i) {
      (*file)[at + i] = static_cast<char>(crc >> (8 * i));
    }
  };
  auto crc = [](std::string_view bytes) {
    return crc32(0, reinterpret_cast<const Bytef*>(bytes.data()),
                 static_cast<uInt>(bytes.size()));
  };
  put(32, crc(std::string_view(*file).substr(kHeaderSize)));
  put(36, crc(std::string_view(*file).substr(0, 36)));
}

TEST_F(FastInflateTest, ReaderGivesTheSameResultsEitherWay) {
  const std::string payload = SamplePayload();
  const std::string good = Wrap(payload, 1, 0);
  ASSERT_FALSE(good.empty());
  std::string bad_adler = good;
  bad_adler.back() ^= 1;
  Reseal(&bad_adler);
  std::string bad_block = good;
  for (size_t i = kHeaderSize + 2; i < kHeaderSize + 64; ++i) {
    bad_block[i] = 'Q';
  }
  Reseal(&bad_block);
  for (const std::string& file : {good, bad_adler, bad_block}) {
    std::string with_zlib;
    std::string with_libdeflate;
    EnableFastInflate(false);
    const Status with_zlib_status = UnwrapPayload(file, &with_zlib);
    EnableFastInflate(true);
    const Status with_libdeflate_status = UnwrapPayload(file, &with_libdeflate);
    EXPECT_EQ(with_libdeflate_status.ok(), with_zlib_status.ok());
    EXPECT_EQ(with_libdeflate_status.message(), with_zlib_status.message());
    if (with_zlib_status.ok()) {
      EXPECT_EQ(with_zlib, payload);
      EXPECT_EQ(with_libdeflate, payload);
    }
  }
  std::string ignored;
  EXPECT_FALSE(UnwrapPayload(bad_adler, &ignored).ok());
  EXPECT_FALSE(UnwrapPayload(bad_block, &ignored).ok());
}

}  // namespace
}  // namespace deepcontext::format

#include "format/payload_codec.h"

#include <gtest/gtest.h>

#include <string>

#include "format/byte_buffer.h"
#include "tests/unit/format/format_test_util.h"

namespace deepcontext::format {
namespace {

// The example profile of docs/FORMAT.md, "Worked example".
Profile DocumentedExample() {
  Profile p;
  p.metadata = {{"pid", "42"}};
  p.strings = {"", "main"};
  p.nodes.push_back({0, FrameKind::kThread, 1, 0, 0});
  p.metrics = {{"calls", "count", ""}};
  p.values = {{1, 0, 2, 2.0, 1.0, 1.0}};
  return p;
}

std::string Hex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out += ' ';
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string Section(uint64_t tag, const std::string& body) {
  std::string out;
  ByteWriter writer(&out);
  writer.PutVarint(tag);
  writer.PutVarint(body.size());
  writer.PutBytes(body);
  return out;
}

// Splits an encoded payload into its (tag, body) sections.
std::vector<std::pair<uint64_t, std::string>> Sections(
    const std::string& payload) {
  std::vector<std::pair<uint64_t, std::string>> sections;
  ByteReader reader(payload);
  while (reader.remaining() > 0) {
    uint64_t tag = 0;
    uint64_t length = 0;
    std::string_view body;
    EXPECT_TRUE(reader.ReadVarint(&tag) && reader.ReadVarint(&length) &&
                reader.ReadBytes(length, &body));
    sections.emplace_back(tag, std::string(body));
  }
  return sections;
}

std::string Join(const std::vector<std::pair<uint64_t, std::string>>& parts) {
  std::string out;
  for (const auto& [tag, body] : parts) out += Section(tag, body);
  return out;
}

// The error decoding payload gives; "" when it decodes.
std::string Decode(const std::string& payload) {
  Profile profile;
  return DecodePayload(payload, &profile).message();
}

TEST(PayloadCodec, MatchesTheDocumentedExample) {
  EXPECT_EQ(Hex(EncodePayload(DocumentedExample())),
            "01 08 01 03 70 69 64 02 34 32 "
            "02 07 02 00 04 6d 61 69 6e "
            "03 0b 02 00 00 00 00 00 00 01 01 00 00 "
            "04 0e 01 05 63 61 6c 6c 73 05 63 6f 75 6e 74 00 "
            "05 1c 01 01 00 02 "
            "00 00 00 00 00 00 00 40 "
            "00 00 00 00 00 00 f0 3f "
            "00 00 00 00 00 00 f0 3f");
}

TEST(PayloadCodec, RoundTrips) {
  const Profile expected = MakeSampleProfile(1000);
  Profile actual;
  ASSERT_TRUE(DecodePayload(EncodePayload(expected), &actual).ok());
  ExpectSameProfile(expected, actual);
}

TEST(PayloadCodec, UnknownSectionsAreSkipped) {
  const Profile expected = MakeSampleProfile(50);
  auto parts = Sections(EncodePayload(expected));
  ASSERT_EQ(parts.size(), 5u);
  parts.insert(parts.begin(), {77, "future data"});
  parts.insert(parts.begin() + 3, {0, ""});
  parts.push_back({UINT64_MAX, std::string(1000, '\xff')});
  Profile actual;
  ASSERT_TRUE(DecodePayload(Join(parts), &actual).ok());
  ExpectSameProfile(expected, actual);
}

TEST(PayloadCodec, SectionOrderDoesNotMatter) {
  const Profile expected = MakeSampleProfile(50);
  auto parts = Sections(EncodePayload(expected));
  std::swap(parts[0], parts[4]);
  std::swap(parts[1], parts[3]);
  Profile actual;
  ASSERT_TRUE(DecodePayload(Join(parts), &actual).ok());
  ExpectSameProfile(expected, actual);
}

TEST(PayloadCodec, EverySectionIsRequiredOnce) {
  const auto parts = Sections(EncodePayload(MakeSampleProfile(20)));
  const char* names[] = {"metadata", "strings", "nodes", "metrics", "values"};
  for (size_t i = 0; i < parts.size(); ++i) {
    auto missing = parts;
    missing.erase(missing.begin() + i);
    EXPECT_EQ(Decode(Join(missing)), std::string("corrupt payload (missing ") +
                                         names[i] + " section)");
    auto twice = parts;
    twice.push_back(parts[i]);
    EXPECT_EQ(Decode(Join(twice)), std::string("corrupt payload (duplicate ") +
                                       names[i] + " section)");
  }
}

TEST(PayloadCodec, HugeCountsAreRejectedBeforeAllocating) {
  const char* expected[] = {
      "metadata section: bad entry count", "strings section: bad string count",
      "nodes section: bad node count", "metrics section: bad metric count",
      "values section: bad value count"};
  const auto parts = Sections(EncodePayload(MakeSampleProfile(20)));
  for (size_t i = 0; i < parts.size(); ++i) {
    for (uint64_t count : {uint64_t{1} << 40, UINT64_MAX}) {
      auto broken = parts;
      std::string body;
      ByteWriter(&body).PutVarint(count);
      broken[i].second = body + std::string(16, '\0');
      EXPECT_EQ(Decode(Join(broken)),
                std::string("corrupt payload (") + expected[i] + ")");
    }
  }
}

// Counts that fit their section but whose records would take far more memory
// than the payload justifies: a few million empty strings are a few MB of
// payload (and a few KB compressed) but 32 bytes each in memory.
TEST(PayloadCodec, CountsBeyondTheMemoryBudgetAreRejectedBeforeAllocating) {
  constexpr size_t kCount = 4'000'000;
  auto parts = Sections(EncodePayload(MakeSampleProfile(20)));
  std::string body;
  ByteWriter(&body).PutVarint(kCount);
  body += std::string(kCount, '\0');
  parts[1].second = body;
  const std::string payload = Join(parts);
  EXPECT_EQ(Decode(payload),
            "corrupt payload (strings section: 4000000 records would take "
            "128000000 bytes of memory, more than a payload of " +
                std::to_string(payload.size()) + " bytes justifies)");
  // The same count of non-empty strings is a payload big enough to hold them.
  body.clear();
  ByteWriter writer(&body);
  writer.PutVarint(kCount);
  for (size_t i = 0; i < kCount; ++i) writer.PutString("frame-name-0123");
  parts[1].second = body;
  EXPECT_EQ(Decode(Join(parts)), "");
}

TEST(PayloadCodec, BytesLeftInASectionAreRejected) {
  auto parts = Sections(EncodePayload(MakeSampleProfile(20)));
  parts[2].second += '\0';
  EXPECT_EQ(Decode(Join(parts)),
            "corrupt payload (nodes section: 1 unexpected bytes at the end)");
}

TEST(PayloadCodec, FieldsWiderThan32BitsAreRejected) {
  Profile p;
  p.nodes.push_back({0, FrameKind::kThread, 0, 0, 0});
  auto parts = Sections(EncodePayload(p));
  std::string nodes;
  ByteWriter writer(&nodes);
  writer.PutVarint(2);
  writer.PutBytes(std::string(5, '\0'));  // the root
  writer.PutVarint(0);
  writer.PutU8(1);
  writer.PutVarint(uint64_t{1} << 32);  // name id
  writer.PutVarint(0);
  writer.PutVarint(0);
  parts[2].second = nodes;
  EXPECT_EQ(Decode(Join(parts)),
            "corrupt payload (nodes section: malformed node 1)");
}

TEST(PayloadCodec, SectionFramingErrors) {
  EXPECT_EQ(Decode("\x03"), "corrupt payload (truncated section at byte 1)");
  EXPECT_EQ(Decode("\x03\x05\x01"),
            "corrupt payload (truncated section at byte 2)");
  EXPECT_EQ(Decode(""), "corrupt payload (missing metadata section)");
}

TEST(PayloadCodec, EveryTruncationIsRejected) {
  const std::string payload = EncodePayload(MakeSampleProfile(30));
  for (size_t len = 0; len < payload.size(); ++len) {
    EXPECT_NE(Decode(payload.substr(0, len)), "") << "length " << len;
  }
}

}  // namespace
}  // namespace deepcontext::format

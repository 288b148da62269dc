#include "format/payload_codec.h"

#include <array>

#include "format/byte_buffer.h"

namespace deepcontext::format {
namespace {

// Smallest encoding of one record in each section; a count larger than the
// section's bytes divided by this is corrupt, which is checked before any
// allocation sized by the count.
constexpr size_t kMinMetadataEntryBytes = 2;  // two empty strings
constexpr size_t kMinStringBytes = 1;         // an empty string
constexpr size_t kMinNodeBytes = 5;           // parent, kind, name, file, line
constexpr size_t kMinMetricBytes = 3;         // three empty strings
constexpr size_t kMinValueBytes = 3 + 3 * 8;  // three varints, three doubles

constexpr int kNumSections = 5;

// The decoded profile may take at most this many bytes of memory per byte of
// payload, plus a fixed allowance that small profiles never reach. Real
// profiles need about 1-4 (nodes take 20 bytes for 5-15 encoded, values 40
// for 27-40); a payload of a hundred million empty strings would need 32.
constexpr uint64_t kMemoryPerPayloadByte = 8;
constexpr uint64_t kMemoryAllowance = uint64_t{64} << 20;

// Memory the decoded records may still take; charged before each section's
// records are allocated, so no count a file declares is trusted beyond what
// its size justifies.
class MemoryBudget {
 public:
  explicit MemoryBudget(size_t payload_size)
      : left_(payload_size * kMemoryPerPayloadByte + kMemoryAllowance) {}

  // Returns false (charging nothing) when count records of record_bytes
  // each do not fit in what is left.
  bool Charge(size_t count, size_t record_bytes) {
    if (count > left_ / record_bytes) return false;
    left_ -= count * record_bytes;
    return true;
  }

 private:
  uint64_t left_;
};

const char* SectionName(SectionTag tag) {
  switch (tag) {
    case SectionTag::kMetadata:
      return "metadata";
    case SectionTag::kStrings:
      return "strings";
    case SectionTag::kNodes:
      return "nodes";
    case SectionTag::kMetrics:
      return "metrics";
    case SectionTag::kValues:
      return "values";
  }
  return "unknown";
}

Status Corrupt(SectionTag tag, const std::string& detail) {
  return Status::Error(std::string("corrupt payload (") + SectionName(tag) +
                       " section: " + detail + ")");
}

// Reads a record count and checks that count records can fit in the rest of
// the section.
bool ReadCount(ByteReader* reader, size_t min_record_bytes, size_t* count) {
  uint64_t value = 0;
  if (!reader->ReadVarint(&value)) return false;
  if (value > reader->remaining() / min_record_bytes) return false;
  *count = static_cast<size_t>(value);
  return true;
}

// The problem of a section whose records would not fit the budget.
Status OverBudget(SectionTag tag, size_t count, size_t record_bytes,
                  size_t payload_size) {
  return Corrupt(tag, std::to_string(count) + " records would take " +
                          std::to_string(count * record_bytes) +
                          " bytes of memory, more than a payload of " +
                          std::to_string(payload_size) + " bytes justifies");
}

// What every section decoder needs besides its bytes.
struct DecodeLimits {
  MemoryBudget* budget;
  size_t payload_size;
  // Where decoded pages go back to the system (may be null), and the start
  // of the payload that the section readers' bytes lie in.
  PayloadBuffer* release;
  const char* payload_begin;

  // Gives back the payload before reader's position every few MB of the
  // large sections, so the payload and the profile are never both whole.
  void ReleaseDecoded(const ByteReader& reader, std::string_view body,
                      size_t record) const {
    constexpr size_t kRecordsPerRelease = size_t{1} << 18;
    if (release == nullptr || record % kRecordsPerRelease != 0) return;
    release->ReleaseBefore(static_cast<size_t>(body.data() - payload_begin) +
                           reader.position());
  }
};

Status DecodeMetadata(ByteReader* reader, const DecodeLimits& limits,
                      Profile* profile) {
  size_t count = 0;
  if (!ReadCount(reader, kMinMetadataEntryBytes, &count)) {
    return Corrupt(SectionTag::kMetadata, "bad entry count");
  }
  if (!limits.budget->Charge(count,
                             sizeof(std::pair<std::string, std::string>))) {
    return OverBudget(SectionTag::kMetadata, count,
                      sizeof(std::pair<std::string, std::string>),
                      limits.payload_size);
  }
  profile->metadata.resize(count);
  for (size_t i = 0; i < count; ++i) {
    auto& [key, value] = profile->metadata[i];
    if (!reader->ReadString(&key) || !reader->ReadString(&value)) {
      return Corrupt(SectionTag::kMetadata,
                     "malformed entry " + std::to_string(i));
    }
  }
  return Status::Ok();
}

Status DecodeStrings(ByteReader* reader, const DecodeLimits& limits,
                     Profile* profile) {
  size_t count = 0;
  if (!ReadCount(reader, kMinStringBytes, &count)) {
    return Corrupt(SectionTag::kStrings, "bad string count");
  }
  if (!limits.budget->Charge(count, sizeof(std::string))) {
    return OverBudget(SectionTag::kStrings, count, sizeof(std::string),
                      limits.payload_size);
  }
  profile->strings.resize(count);
  for (size_t i = 0; i < count; ++i) {
    if (!reader->ReadString(&profile->strings[i])) {
      return Corrupt(SectionTag::kStrings,
                     "malformed string " + std::to_string(i));
    }
  }
  return Status::Ok();
}

Status DecodeNodes(ByteReader* reader, std::string_view body,
                   const DecodeLimits& limits, Profile* profile) {
  size_t count = 0;
  if (!ReadCount(reader, kMinNodeBytes, &count)) {
    return Corrupt(SectionTag::kNodes, "bad node count");
  }
  if (!limits.budget->Charge(count, sizeof(Node))) {
    return OverBudget(SectionTag::kNodes, count, sizeof(Node),
                      limits.payload_size);
  }
  profile->nodes.resize(count);
  for (size_t i = 0; i < count; ++i) {
    limits.ReleaseDecoded(*reader, body, i);
    Node& node = profile->nodes[i];
    uint8_t kind = 0;
    if (!reader->ReadVarint32(&node.parent) || !reader->ReadU8(&kind) ||
        !reader->ReadVarint32(&node.name) ||
        !reader->ReadVarint32(&node.file) ||
        !reader->ReadVarint32(&node.line)) {
      return Corrupt(SectionTag::kNodes, "malformed node " + std::to_string(i));
    }
    // Out-of-range kinds are kept so ValidateProfile reports them by value.
    node.kind = static_cast<FrameKind>(kind);
  }
  return Status::Ok();
}

Status DecodeMetrics(ByteReader* reader, const DecodeLimits& limits,
                     Profile* profile) {
  size_t count = 0;
  if (!ReadCount(reader, kMinMetricBytes, &count)) {
    return Corrupt(SectionTag::kMetrics, "bad metric count");
  }
  if (!limits.budget->Charge(count, sizeof(MetricDescriptor))) {
    return OverBudget(SectionTag::kMetrics, count, sizeof(MetricDescriptor),
                      limits.payload_size);
  }
  profile->metrics.resize(count);
  for (size_t i = 0; i < count; ++i) {
    MetricDescriptor& metric = profile->metrics[i];
    if (!reader->ReadString(&metric.name) ||
        !reader->ReadString(&metric.unit) ||
        !reader->ReadString(&metric.description)) {
      return Corrupt(SectionTag::kMetrics,
                     "malformed metric " + std::to_string(i));
    }
  }
  return Status::Ok();
}

Status DecodeValues(ByteReader* reader, std::string_view body,
                    const DecodeLimits& limits, Profile* profile) {
  size_t count = 0;
  if (!ReadCount(reader, kMinValueBytes, &count)) {
    return Corrupt(SectionTag::kValues, "bad value count");
  }
  if (!limits.budget->Charge(count, sizeof(MetricValue))) {
    return OverBudget(SectionTag::kValues, count, sizeof(MetricValue),
                      limits.payload_size);
  }
  profile->values.resize(count);
  for (size_t i = 0; i < count; ++i) {
    limits.ReleaseDecoded(*reader, body, i);
    MetricValue& value = profile->values[i];
    if (!reader->ReadVarint32(&value.node) ||
        !reader->ReadVarint32(&value.metric) ||
        !reader->ReadVarint(&value.count) || !reader->ReadDouble(&value.sum) ||
        !reader->ReadDouble(&value.min) || !reader->ReadDouble(&value.max)) {
      return Corrupt(SectionTag::kValues,
                     "malformed value " + std::to_string(i));
    }
  }
  return Status::Ok();
}

Status DecodeSection(SectionTag tag, ByteReader* reader, std::string_view body,
                     const DecodeLimits& limits, Profile* profile) {
  switch (tag) {
    case SectionTag::kMetadata:
      return DecodeMetadata(reader, limits, profile);
    case SectionTag::kStrings:
      return DecodeStrings(reader, limits, profile);
    case SectionTag::kNodes:
      return DecodeNodes(reader, body, limits, profile);
    case SectionTag::kMetrics:
      return DecodeMetrics(reader, limits, profile);
    case SectionTag::kValues:
      return DecodeValues(reader, body, limits, profile);
  }
  return Status::Ok();
}

}  // namespace

void PutSection(SectionTag tag, std::string_view body, ByteWriter* out) {
  out->PutVarint(static_cast<uint64_t>(tag));
  out->PutVarint(body.size());
  out->PutBytes(body);
}

void PutMetadataEntry(std::string_view key, std::string_view value,
                      ByteWriter* out) {
  out->PutString(key);
  out->PutString(value);
}

void PutNodeRecord(const Node& node, ByteWriter* out) {
  out->PutVarint(node.parent);
  out->PutU8(static_cast<uint8_t>(node.kind));
  out->PutVarint(node.name);
  out->PutVarint(node.file);
  out->PutVarint(node.line);
}

void PutMetricRecord(const MetricDescriptor& metric, ByteWriter* out) {
  out->PutString(metric.name);
  out->PutString(metric.unit);
  out->PutString(metric.description);
}

void PutValueRecord(const MetricValue& value, ByteWriter* out) {
  out->PutVarint(value.node);
  out->PutVarint(value.metric);
  out->PutVarint(value.count);
  out->PutDouble(value.sum);
  out->PutDouble(value.min);
  out->PutDouble(value.max);
}

std::string EncodePayload(const Profile& profile) {
  std::string payload;
  ByteWriter out(&payload);
  std::string body;
  ByteWriter section(&body);

  section.PutVarint(profile.metadata.size());
  for (const auto& [key, value] : profile.metadata) {
    PutMetadataEntry(key, value, &section);
  }
  PutSection(SectionTag::kMetadata, body, &out);

  body.clear();
  section.PutVarint(profile.strings.size());
  for (const std::string& s : profile.strings) section.PutString(s);
  PutSection(SectionTag::kStrings, body, &out);

  body.clear();
  section.PutVarint(profile.nodes.size());
  for (const Node& node : profile.nodes) PutNodeRecord(node, &section);
  PutSection(SectionTag::kNodes, body, &out);

  body.clear();
  section.PutVarint(profile.metrics.size());
  for (const MetricDescriptor& metric : profile.metrics) {
    PutMetricRecord(metric, &section);
  }
  PutSection(SectionTag::kMetrics, body, &out);

  body.clear();
  section.PutVarint(profile.values.size());
  for (const MetricValue& value : profile.values) {
    PutValueRecord(value, &section);
  }
  PutSection(SectionTag::kValues, body, &out);
  return payload;
}

Status DecodePayload(std::string_view payload, Profile* profile,
                     PayloadBuffer* release) {
  std::array<bool, kNumSections + 1> seen{};
  MemoryBudget budget(payload.size());
  const DecodeLimits limits{&budget, payload.size(), release, payload.data()};
  ByteReader reader(payload);
  while (reader.remaining() > 0) {
    uint64_t raw_tag = 0;
    uint64_t length = 0;
    std::string_view body;
    if (!reader.ReadVarint(&raw_tag) || !reader.ReadVarint(&length) ||
        length > reader.remaining() ||
        !reader.ReadBytes(static_cast<size_t>(length), &body)) {
      return Status::Error("corrupt payload (truncated section at byte " +
                           std::to_string(reader.position()) + ")");
    }
    // Sections unknown to this reader come from a newer minor version, which
    // only adds information that older readers may ignore.
    if (raw_tag == 0 || raw_tag > kNumSections) continue;
    const auto tag = static_cast<SectionTag>(raw_tag);
    if (seen[raw_tag]) {
      return Status::Error(std::string("corrupt payload (duplicate ") +
                           SectionName(tag) + " section)");
    }
    seen[raw_tag] = true;
    ByteReader section(body);
    Status decoded = DecodeSection(tag, &section, body, limits, profile);
    if (!decoded.ok()) return decoded;
    if (section.remaining() != 0) {
      return Corrupt(tag, std::to_string(section.remaining()) +
                              " unexpected bytes at the end");
    }
  }
  for (int t = 1; t <= kNumSections; ++t) {
    if (!seen[t]) {
      return Status::Error(std::string("corrupt payload (missing ") +
                           SectionName(static_cast<SectionTag>(t)) +
                           " section)");
    }
  }
  return Status::Ok();
}

}  // namespace deepcontext::format

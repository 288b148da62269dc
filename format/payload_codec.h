// The decompressed payload of a .dctx file: a sequence of tagged sections
// holding one Profile (docs/FORMAT.md, "Payload"). Internal to format/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "format/byte_buffer.h"
#include "format/payload_buffer.h"
#include "format/profile_data.h"

namespace deepcontext::format {

// Section tags. Stored in files: append only, never renumber.
enum class SectionTag : uint64_t {
  kMetadata = 1,
  kStrings = 2,
  kNodes = 3,
  kMetrics = 4,
  kValues = 5,
};

// Appends a section: its tag, its body's length and the body.
void PutSection(SectionTag tag, std::string_view body, ByteWriter* out);
// Append one record of a section's body, in the layout EncodePayload uses;
// a body is the varint record count followed by its records.
void PutMetadataEntry(std::string_view key, std::string_view value,
                      ByteWriter* out);
void PutNodeRecord(const Node& node, ByteWriter* out);
void PutMetricRecord(const MetricDescriptor& metric, ByteWriter* out);
void PutValueRecord(const MetricValue& value, ByteWriter* out);

// Serializes profile into sections, without checking its invariants (so that
// tests can produce files that break them). May throw std::bad_alloc.
std::string EncodePayload(const Profile& profile);

// Parses payload into *profile (which must be default-constructed). Checks
// the encoding only: section framing, lengths, counts and field widths; the
// caller checks invariants with ValidateProfile. Counts are refused before
// anything is allocated for them when their records could not fit in their
// section, or would take more memory than the payload's size justifies
// (8 bytes per payload byte plus 64 MiB). An error is a one-line problem.
// May throw std::bad_alloc.
// When release is given, payload is its view, and the pages already decoded
// are given back to the system as decoding proceeds.
Status DecodePayload(std::string_view payload, Profile* profile,
                     PayloadBuffer* release = nullptr);

}  // namespace deepcontext::format

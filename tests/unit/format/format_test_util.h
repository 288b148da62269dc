// Shared helpers for the format/ unit tests: sample profiles, field-by-field
// profile comparison, encoded bytes, and the scratch directories of
// tests/unit/scratch_dir.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/profile_data.h"
#include "tests/unit/scratch_dir.h"

namespace deepcontext::format {

// A deterministic profile with num_nodes nodes in a random-looking tree of
// every frame kind, non-ASCII strings, metadata and three metrics with
// values on most nodes (including a NaN and a negative zero).
Profile MakeSampleProfile(uint32_t num_nodes);

// Adds a gtest failure for every difference; doubles compare bit for bit.
void ExpectSameProfile(const Profile& expected, const Profile& actual);

// Writes bytes to path, replacing it; fails the test on error.
void WriteBytes(const std::string& path, const std::string& bytes);

// Reads the whole file; fails the test on error.
std::string ReadBytes(const std::string& path);

// The file WrapPayload makes; fails the test (and gives "") when zlib does.
std::string Wrap(const std::string& payload, uint16_t major, uint16_t minor);

// The bytes EncodeProfile gives; fails the test (and gives "") when memory
// or zlib does.
std::string Encode(const Profile& profile);

}  // namespace deepcontext::format

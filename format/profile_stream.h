// Writing a .dctx file section by section, compressing as it goes, for
// writers whose profile is too large to hold twice: the runtime at a
// program's exit encodes each section straight from its live state, so it
// never holds a format::Profile, the payload or the compressed bytes whole.
// The file is the same as WriteProfileFile's (docs/FORMAT.md) and replaces
// its path atomically.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "format/profile_data.h"

namespace deepcontext::format {

// One section's records; the count that precedes them in the file is
// kept as they are added.
class SectionBody {
 public:
  void AddMetadata(std::string_view key, std::string_view value);
  void AddString(std::string_view text);
  void AddNode(const Node& node);
  void AddMetric(const MetricDescriptor& metric);
  void AddValue(const MetricValue& value);

  uint64_t count() const { return count_; }
  const std::string& records() const { return records_; }

 private:
  uint64_t count_ = 0;
  std::string records_;
};

// Errors are one line naming the path; no method throws (running out of
// memory is an error). After an error the writer only cleans up, and every
// later call returns that first error.
class ProfileStreamWriter {
 public:
  ProfileStreamWriter();
  // Removes the temporary file unless Finish succeeded.
  ~ProfileStreamWriter();
  ProfileStreamWriter(const ProfileStreamWriter&) = delete;
  ProfileStreamWriter& operator=(const ProfileStreamWriter&) = delete;

  // Creates the temporary file next to path.
  Status Begin(const std::string& path);

  // Each section once, in any order (readers accept any order); the body
  // can be freed as soon as the call returns.
  Status AddMetadata(const SectionBody& body);
  Status AddStrings(const SectionBody& body);
  Status AddNodes(const SectionBody& body);
  Status AddMetrics(const SectionBody& body);
  Status AddValues(const SectionBody& body);

  // Completes the file (header last, once sizes and checksums are known)
  // and renames it over the path.
  Status Finish();

 private:
  struct State;
  Status AddSection(uint64_t tag, const SectionBody& body);
  // Keeps `problem` as the first error, which later calls return too.
  Status Failed(std::string problem);

  std::unique_ptr<State> state_;
};

}  // namespace deepcontext::format

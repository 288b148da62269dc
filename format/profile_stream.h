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
// memory is an error). After an error the writer only cleans up.
class ProfileStreamWriter {
 public:
  ProfileStreamWriter();
  // Removes the temporary file unless Finish succeeded.
  ~ProfileStreamWriter();
  ProfileStreamWriter(const ProfileStreamWriter&) = delete;
  ProfileStreamWriter& operator=(const ProfileStreamWriter&) = delete;

  // Creates the temporary file next to path.
  std::string Begin(const std::string& path);

  // Each section once, in any order (readers accept any order); the body
  // can be freed as soon as the call returns.
  std::string AddMetadata(const SectionBody& body);
  std::string AddStrings(const SectionBody& body);
  std::string AddNodes(const SectionBody& body);
  std::string AddMetrics(const SectionBody& body);
  std::string AddValues(const SectionBody& body);

  // Completes the file (header last, once sizes and checksums are known)
  // and renames it over the path.
  std::string Finish();

 private:
  struct State;
  std::string AddSection(uint64_t tag, const SectionBody& body);

  std::unique_ptr<State> state_;
};

}  // namespace deepcontext::format

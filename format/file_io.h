// Whole-file reads and crash-safe whole-file writes, with errno-based error
// text. Internal to format/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace deepcontext::format {

// Replaces the file at path with bytes: writes a temporary file
// "<path>.<pid>.<n>.tmp" in the same directory, fsyncs it and renames it over
// path, so readers see either the old or the new file, never a partial one.
// On failure the temporary file is removed, and the error is one line such
// as "cannot create temporary file x.dctx.12.0.tmp: Permission denied"
// (without the path prefix). May throw std::bad_alloc.
Status WriteFileAtomically(const std::string& path, std::string_view bytes);

// A file written in pieces that replaces path only once complete: the
// bytes go to a temporary file "<path>.<pid>.<n>.tmp" in the same directory,
// which Commit() fsyncs and renames over path. An AtomicFile destroyed
// before a successful Commit() removes its temporary file. Errors are one
// line without the path prefix, as for WriteFileAtomically.
class AtomicFile {
 public:
  AtomicFile() = default;
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  Status Create(const std::string& path);
  // Appends bytes at the end of what was written.
  Status Append(std::string_view bytes);
  // Overwrites bytes at offset (within what was written).
  Status WriteAt(uint64_t offset, std::string_view bytes);
  Status Commit();

 private:
  std::string path_;
  std::string temp_;  // empty once renamed
  int fd_ = -1;
};

// Reads the whole regular file at path, refusing anything else (devices
// such as /dev/zero, pipes, directories) and files larger than max_bytes
// before reading them. The error is one line such as "cannot open: No such
// file or directory" or "not a regular file". May throw std::bad_alloc.
StatusOr<std::string> ReadWholeFile(const std::string& path, size_t max_bytes);

}  // namespace deepcontext::format

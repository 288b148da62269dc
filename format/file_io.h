// Whole-file reads and crash-safe whole-file writes, with errno-based error
// text. Internal to format/.
#pragma once

#include <string>
#include <string_view>

namespace deepcontext::format {

// Replaces the file at path with bytes: writes a temporary file
// "<path>.<pid>.<n>.tmp" in the same directory, fsyncs it and renames it over
// path, so readers see either the old or the new file, never a partial one.
// On failure the temporary file is removed. Returns "" on success, otherwise
// one line such as "cannot create temporary file x.dctx.12.0.tmp: Permission
// denied" (without the path prefix). May throw std::bad_alloc.
std::string WriteFileAtomically(const std::string& path,
                                std::string_view bytes);

// Reads the whole regular file at path into *bytes, refusing anything else
// (devices such as /dev/zero, pipes, directories) and files larger than
// max_bytes before reading them. Returns "" on success, otherwise one line
// such as "cannot open: No such file or directory" or "not a regular file".
// May throw std::bad_alloc.
std::string ReadWholeFile(const std::string& path, size_t max_bytes,
                          std::string* bytes);

}  // namespace deepcontext::format

// UTF-8 encoding of CPython's fixed-width string storage (PEP 393 kinds).
//
// The frame reader copies names out of unicode objects by hand, without the
// Python API (which may allocate and needs the GIL), so it needs its own
// UCS1/UCS2/UCS4 -> UTF-8 conversion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace deepcontext::python {

// Appends `code_point` encoded as UTF-8. Surrogates (U+D800..U+DFFF, which
// CPython strings may hold unpaired) and values above U+10FFFF are not valid
// UTF-8 and become U+FFFD.
void AppendUtf8(uint32_t code_point, std::string* out);

// Appends `length` code points stored `kind` bytes each (1, 2 or 4: CPython's
// PyUnicode_1BYTE/2BYTE/4BYTE_KIND) as UTF-8. Returns false, appending
// nothing, for any other kind.
bool AppendUcsAsUtf8(const void* data, int kind, size_t length,
                     std::string* out);

}  // namespace deepcontext::python

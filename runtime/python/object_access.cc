#include "runtime/python/object_access.h"

#include "runtime/python/utf8.h"

namespace deepcontext::python {

bool AppendUnicodeUtf8(const FrameLayout& layout, const void* unicode_type,
                       const void* unicode, std::string* out) {
  if (!HasType(layout, unicode, unicode_type)) return false;
  const auto state = LoadField<uint32_t>(unicode, layout.unicode_state);
  if ((state & layout.state_compact_mask) == 0) return false;
  if (layout.state_ready_mask != 0 && (state & layout.state_ready_mask) == 0) {
    return false;
  }
  const auto length = LoadField<int64_t>(unicode, layout.unicode_length);
  if (length < 0 || length > kMaxUnicodeLength) return false;
  const bool ascii = (state & layout.state_ascii_mask) != 0;
  const int kind = ascii ? 1
                         : static_cast<int>((state & layout.state_kind_mask) >>
                                            layout.state_kind_shift);
  const char* data = static_cast<const char*>(unicode) +
                     (ascii ? layout.ascii_data : layout.compact_data);
  return AppendUcsAsUtf8(data, kind, static_cast<size_t>(length), out);
}

}  // namespace deepcontext::python

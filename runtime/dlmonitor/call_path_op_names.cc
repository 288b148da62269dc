// CallPathBuilder's op names: every op entry's lookup in the thread's
// cache of names by address (InternOpName, on the op path), and the names
// that cache does not hold, a name built per call or met first (out of the
// op path, runtime/common/hot_path.h).
#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "runtime/common/hot_path.h"
#include "runtime/dlmonitor/call_path_builder.h"
#include "runtime/dlmonitor/call_path_thread_state.h"

namespace deepcontext::dlmonitor {

namespace {

// Whether the C string `name` is the `length` bytes of `text` (which hold
// no NUL). Inline, not strncmp: every op entry called into the C library's
// code, which the step's own work had evicted between two ops. A word at a
// time once `name` is 8-byte aligned, as C libraries compare: backward
// functions' names share their first 37 bytes ("autograd::engine::
// evaluate_function: "). Such a word may reach past the terminator, but
// never past the page of a byte that exists (name[i]: the bytes before it
// matched text's, none of which is NUL), and a word that holds the
// terminator differs from text's there.
// Inlined where AddressSanitizer is off (InternOpName), which that needs.
[[gnu::always_inline]] inline bool SameName(const char* name, const char* text,
                                            uint32_t length) {
  uint32_t i = 0;
  for (; i < length && (reinterpret_cast<uintptr_t>(name + i) & 7) != 0; ++i) {
    if (name[i] != text[i]) return false;
  }
  for (; i + 8 <= length; i += 8) {
    uint64_t from_name;
    uint64_t from_text;
    std::memcpy(&from_name, name + i, 8);
    std::memcpy(&from_text, text + i, 8);
    if (from_name != from_text) return false;
  }
  for (; i < length; ++i) {
    if (name[i] != text[i]) return false;
  }
  return name[length] == '\0';
}

// SameName for an 8-byte aligned `name` against an entry's inline copy
// (OpNameCacheEntry, terminated, kInlineOpName bytes of room): whole words,
// the last one masked to the bytes up to the terminator, which it compares
// as well; what follows the copy's terminator is never looked at. No byte
// loops: most op names are heap strings, so aligned, and shorter than the
// copy. The words read of `name` are those SameName reads, and end in the
// word of a byte that exists.
[[gnu::always_inline]] inline bool SameAlignedName(const char* name, const char* inline_text,
                                                   uint32_t length) {
  static_assert(std::endian::native == std::endian::little,
                "the last word's mask keeps its low bytes");
  const uint32_t last = length / 8;  // the word holding the terminator
  for (uint32_t i = 0; i < last; ++i) {
    uint64_t from_name;
    uint64_t from_text;
    std::memcpy(&from_name, name + 8 * i, 8);
    std::memcpy(&from_text, inline_text + 8 * i, 8);
    if (from_name != from_text) return false;
  }
  uint64_t from_name;
  uint64_t from_text;
  std::memcpy(&from_name, name + 8 * last, 8);
  std::memcpy(&from_text, inline_text + 8 * last, 8);
  const uint64_t through_terminator = ~uint64_t{0} >> (8 * (7 - length % 8));
  return ((from_name ^ from_text) & through_terminator) == 0;
}

// The slot of a name in the text cache: its length and its first and last
// eight bytes (the bytes it has, when shorter).
size_t OpNameTextSlot(std::string_view name) {
  uint64_t first = 0;
  uint64_t last = 0;
  if (name.size() >= 8) {
    std::memcpy(&first, name.data(), 8);
    std::memcpy(&last, name.data() + name.size() - 8, 8);
  } else {
    std::memcpy(&first, name.data(), name.size());
  }
  const uint64_t mixed = (first * 0x9E3779B97F4A7C15ULL) ^
                         (last * 0xC2B2AE3D27D4EB4FULL) ^ name.size();
  return static_cast<size_t>(mixed >> 40) % kOpNameTextCacheSize;
}

bool HoldsText(const OpNameCacheEntry& entry, std::string_view name) {
  if (entry.text == nullptr || entry.length != name.size()) return false;
  const char* text = entry.length < kInlineOpName ? entry.inline_text : entry.text;
  return std::memcmp(text, name.data(), name.size()) == 0;
}

void Remember(OpNameCacheEntry& entry, const char* pointer, std::string_view name,
              const char* interned, StringId id) {
  entry.pointer = pointer;
  entry.text = interned;
  entry.length = static_cast<uint32_t>(name.size());
  entry.id = id;
  if (name.size() < kInlineOpName) {
    std::memcpy(entry.inline_text, name.data(), name.size());
    entry.inline_text[name.size()] = '\0';
  }
}

}  // namespace

// Not instrumented by AddressSanitizer: SameName's words may reach past a
// name's terminator (never past its page).
DEEPCONTEXT_HOT [[gnu::no_sanitize_address]]
StringId CallPathBuilder::InternOpName(ThreadState& state, const char* name) {
  if (name == nullptr) name = "";
  // Framework op names are mostly static strings: their address finds them.
  OpNameCacheEntry& cached =
      state.op_name_cache[(reinterpret_cast<uintptr_t>(name) >> 3) %
                          kOpNameCacheSize];
  if (cached.pointer == name) [[likely]] {
    if (cached.length < kInlineOpName) [[likely]] {
      if ((reinterpret_cast<uintptr_t>(name) & 7) == 0
              ? SameAlignedName(name, cached.inline_text, cached.length)
              : SameName(name, cached.inline_text, cached.length)) [[likely]] {
        return cached.id;
      }
    } else if (SameName(name, cached.text, cached.length)) {
      return cached.id;
    }
  }
  return InternNewOpName(state, name, cached);
}

StringId CallPathBuilder::InternNewOpName(ThreadState& state, const char* name,
                                          OpNameCacheEntry& cached) {
  const std::string_view view(name);
  OpNameCacheEntry& by_text = state.op_name_text_cache[OpNameTextSlot(view)];
  StringId id = 0;
  if (HoldsText(by_text, view)) {
    id = by_text.id;
  } else {
    if (auto it = state.op_names.find(view); it != state.op_names.end()) {
      id = it->second;
    } else {
      id = strings_.Intern(view);
      // User-scope names can be unbounded (f-strings with step numbers):
      // stop caching rather than growing forever; the global table still
      // dedupes.
      if (state.op_names.size() < 65536) state.op_names.emplace(view, id);
    }
    Remember(by_text, nullptr, view, strings_.Get(id), id);
  }
  Remember(cached, name, view, by_text.text, id);
  return id;
}

}  // namespace deepcontext::dlmonitor

// CallPathBuilder's op names the thread's cache of names by address does
// not hold: a name built per call, or met first. Out of the op path
// (runtime/common/hot_path.h), which InternOpName keeps.
#include <cstring>
#include <string_view>

#include "runtime/dlmonitor/call_path_builder.h"
#include "runtime/dlmonitor/call_path_thread_state.h"

namespace deepcontext::dlmonitor {

namespace {

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

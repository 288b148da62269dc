#include "runtime/dlmonitor/string_table.h"

namespace deepcontext::dlmonitor {

StringTable::StringTable() { Intern(""); }

StringId StringTable::Intern(std::string_view text) {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = index_.find(text);
  if (it != index_.end()) return it->second;
  size_t index = 0;
  Slot* slot = slots_.Append(&index);
  if (slot == nullptr) return 0;  // table full: degrade to the empty name
  // Strings are never freed: their addresses are handed out as frame names
  // that stay valid until exit.
  auto* owned = new std::string(text);
  slot->text.store(owned, std::memory_order_release);
  index_.emplace(std::string_view(*owned), static_cast<StringId>(index));
  return static_cast<StringId>(index);
}

const char* StringTable::Get(StringId id) const {
  const Slot* slot = slots_.At(id);
  if (slot == nullptr) return "";
  const std::string* text = slot->text.load(std::memory_order_acquire);
  return text == nullptr ? "" : text->c_str();
}

}  // namespace deepcontext::dlmonitor

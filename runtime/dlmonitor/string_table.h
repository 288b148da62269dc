// Process-wide interning of names and file paths used by context frames.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "runtime/common/chunked_array.h"

namespace deepcontext::dlmonitor {

using StringId = uint32_t;

class StringTable {
 public:
  StringTable();

  // Returns the id of `text`, adding it on first sight. Id 0 is "".
  // [any thread] Takes a mutex: callers on hot paths keep a per-thread cache.
  StringId Intern(std::string_view text);

  // The interned text; stays valid for the life of the table.
  // [any thread] Lock-free.
  const char* Get(StringId id) const;

 private:
  struct Slot {
    ~Slot() { delete text.load(std::memory_order_relaxed); }
    std::atomic<const std::string*> text{nullptr};
  };
  std::mutex mutex_;  // guards index_ and appends
  std::unordered_map<std::string_view, StringId> index_;
  ChunkedArray<Slot> slots_;
};

}  // namespace deepcontext::dlmonitor

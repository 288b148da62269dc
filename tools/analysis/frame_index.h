// The identity of frames while a ProfileTree is built: frames as keys of
// pooled string ids, the table that numbers them, and the grouping that
// tells a profile's own frames apart without that table. Internal to
// tools/analysis (profile_tree.cc).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "format/profile_data.h"
#include "tools/analysis/frame.h"

namespace deepcontext::analysis {

// A frame with its strings replaced by ids into the builder's pool of
// distinct strings, so that equal frames have equal keys whichever profile
// (and string table) they come from.
struct FrameKey {
  format::FrameKind kind;
  uint32_t name;
  uint32_t file;
  uint32_t line;
  bool operator==(const FrameKey&) const = default;
};

inline size_t HashKey(const FrameKey& key) {
  uint64_t h = (uint64_t{key.name} << 32 | key.file) * 0x9e3779b97f4a7c15ULL;
  h ^= (uint64_t{key.line} << 8 | static_cast<uint8_t>(key.kind)) + (h >> 29);
  h *= 0xff51afd7ed558ccdULL;
  return static_cast<size_t>(h ^ (h >> 32));
}

// FrameIds by FrameKey: open addressing over a flat array of slots, because
// a node-based map would allocate (and later free) once per distinct frame.
// A slot keeps part of its key's hash beside the id, so a probe past another
// frame's slot is decided there, without reading that frame's key.
//
// Keys may also be appended unindexed (Append), when the caller knows they
// are new: a profile's own frames are told apart without this table (see
// FirstEqualKeys below), so building the tree of one profile
// never fills a table as large as its frames, whose every lookup would be a
// cache miss. They are indexed only when a later lookup needs them.
class FrameIndex {
 public:
  // Returns the id of key, or assigns the next id when new (*added = true).
  FrameId Intern(const FrameKey& key, bool* added) {
    IndexAppended();
    if (const FrameId id = Find(key); id != kNone) {
      *added = false;
      return id;
    }
    *added = true;
    return Insert(key);
  }

  // Returns the id of key among the keys added before the last Intern or
  // IndexAppended (appended ones are not seen), or kNone.
  FrameId Find(const FrameKey& key) const {
    if (slots_.empty()) return kNone;
    const size_t hash = HashKey(key);
    const uint32_t tag = Tag(hash);
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (slot.id == kNone) return kNone;
      if (slot.tag == tag && keys_[slot.id] == key) return slot.id;
    }
  }

  // Gives key, which must differ from every key already added, the next id
  // without indexing it yet.
  FrameId Append(const FrameKey& key) {
    keys_.push_back(key);
    return static_cast<FrameId>(keys_.size() - 1);
  }

  // Indexes the keys appended since the last call.
  void IndexAppended() {
    while (indexed_ < keys_.size()) {
      Insert(keys_[indexed_], static_cast<FrameId>(indexed_));
    }
  }

  static constexpr FrameId kNone = UINT32_MAX;

 private:
  struct Slot {
    FrameId id = kNone;
    uint32_t tag = 0;
  };

  // The hash bits the slot index does not use (tables stay below 2^32).
  static uint32_t Tag(size_t hash) {
    return static_cast<uint32_t>(static_cast<uint64_t>(hash) >> 32);
  }

  // Indexes key, which is either new (id kNone: it takes the next id) or
  // keys_[id]; every key before it must be indexed already.
  FrameId Insert(const FrameKey& key, FrameId id = kNone) {
    if (id == kNone) id = Append(key);
    if ((indexed_ + 1) * 2 > slots_.size()) {
      size_t slots = std::max<size_t>(64, slots_.size());
      while ((keys_.size() + 1) * 2 > slots) slots *= 2;
      Rehash(slots);
    }
    Place(key, id);
    ++indexed_;
    return id;
  }

  void Place(const FrameKey& key, FrameId id) {
    const size_t hash = HashKey(key);
    const size_t mask = slots_.size() - 1;
    size_t i = hash & mask;
    while (slots_[i].id != kNone) i = (i + 1) & mask;
    slots_[i] = Slot{id, Tag(hash)};
  }

  // Rebuilds the table with slots slots from the indexed keys.
  void Rehash(size_t slots) {
    slots_.assign(slots, Slot{});
    for (FrameId id = 0; id < indexed_; ++id) Place(keys_[id], id);
  }

  std::vector<Slot> slots_;
  std::vector<FrameKey> keys_;  // by FrameId
  size_t indexed_ = 0;          // keys_[0, indexed_) are in slots_
};

// For each of items, the index of the first item with an equal key (its
// own when none comes before it); item 0 is left out (it is the root) and
// maps to 0. key_of gives an item's key, whose name must be less than names.
// Items are first grouped by name, so that each name's items are told apart
// in a table of their own that stays in cache; one table over all of a
// large profile's frames would miss the cache on nearly every node.
template <typename Item, typename KeyOf>
std::vector<uint32_t> FirstEqualKeys(const std::vector<Item>& items,
                                     uint32_t names, const KeyOf& key_of) {
  const size_t n = items.size();
  auto name_of = [&](const Item& item) { return key_of(item).name; };
  // Items by name, each name's in index order (a counting sort).
  std::vector<uint32_t> name_begin(names + 1, 0);
  for (size_t i = 1; i < n; ++i) ++name_begin[name_of(items[i]) + 1];
  for (uint32_t k = 0; k < names; ++k) name_begin[k + 1] += name_begin[k];
  std::vector<uint32_t> by_name(name_begin[names]);
  {
    std::vector<uint32_t> next(name_begin.begin(), name_begin.end() - 1);
    for (size_t i = 1; i < n; ++i) {
      by_name[next[name_of(items[i])]++] = static_cast<uint32_t>(i);
    }
  }
  std::vector<uint32_t> first(n);
  first[0] = 0;
  std::vector<uint32_t> slots;  // item indices; UINT32_MAX when empty
  for (uint32_t k = 0; k < names; ++k) {
    const uint32_t begin = name_begin[k];
    const uint32_t end = name_begin[k + 1];
    if (end - begin == 1) first[by_name[begin]] = by_name[begin];
    if (end - begin <= 1) continue;
    size_t size = 16;
    while (size < 2 * size_t{end - begin}) size *= 2;
    slots.assign(size, UINT32_MAX);
    const size_t mask = size - 1;
    for (uint32_t j = begin; j < end; ++j) {
      const uint32_t item = by_name[j];
      const FrameKey key = key_of(items[item]);
      for (size_t s = HashKey(key) & mask;; s = (s + 1) & mask) {
        if (slots[s] == UINT32_MAX) {
          slots[s] = item;
          first[item] = item;
          break;
        }
        if (key_of(items[slots[s]]) == key) {
          first[item] = slots[s];
          break;
        }
      }
    }
  }
  return first;
}

}  // namespace deepcontext::analysis

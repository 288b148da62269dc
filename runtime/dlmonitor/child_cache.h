// A thread's recent answers of ContextTree::Child, in front of the tree.
// Internal to dc_dlmonitor (CallPathBuilder::CachedChild).
//
// Every op looks its node up under its parent, and an op entered from
// Python looks up the node of each Python frame that differs from the
// thread's previous capture (the line of the loop body that runs now). The
// tree answers under its lock, through a child list or index whose lines
// the step's own work evicts between two ops; a node, once made, is never
// removed or moved, and a full tree folds a key the same way each time, so
// an answer can be kept per thread and the lock skipped.
//
// Direct-mapped by (parent, key). Entries are 32 bytes, two to a cache
// line, so a lookup reads one line. Keys are whole FrameKeys: the frames of
// one Python function differ by line alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "runtime/dlmonitor/context_tree.h"

namespace deepcontext::dlmonitor {

class ChildCache {
 public:
  static constexpr size_t kSize = 512;

  struct Entry {
    ContextId parent = kNoContext;
    FrameKey key;
    ContextId child = kNoContext;
  };
  static_assert(sizeof(Entry) == 32, "two entries per cache line");
  static_assert(sizeof(FrameKey) == 16, "a key is two words");

  // The slot (parent, key) maps to, whether or not it holds them.
  Entry& SlotOf(ContextId parent, const FrameKey& key) {
    const Words words = WordsOf(key);
    const uint64_t hash = (parent * 0x9E3779B97F4A7C15ULL ^ words.first * 0x85EBCA6BULL ^
                           words.second * 0xC2B2AE35ULL) >> 32;
    return entries_[hash % kSize];
  }

  // The remembered child of `parent` with `key`, or kNoContext. Asked at
  // every op: the key is compared as two words.
  static ContextId Answer(const Entry& slot, ContextId parent, const FrameKey& key) {
    const Words held = WordsOf(slot.key);
    const Words asked = WordsOf(key);
    return slot.parent == parent && held.first == asked.first && held.second == asked.second
               ? slot.child
               : kNoContext;
  }

  // Remembers `child` (kNoContext is not remembered: a full tree may
  // answer later).
  static void Remember(Entry& slot, ContextId parent, const FrameKey& key,
                       ContextId child) {
    if (child != kNoContext) slot = Entry{parent, key, child};
  }

 private:
  struct Words {
    uint64_t first;
    uint64_t second;
  };
  static Words WordsOf(const FrameKey& key) {
    Words words;
    std::memcpy(&words, &key, sizeof(words));
    return words;
  }

  alignas(64) Entry entries_[kSize];
};

}  // namespace deepcontext::dlmonitor

// Maps captured Python frames (code object, instruction offset) to context
// frame keys (function, file, line), resolving each call site once.
//
// Resolution reads the code object, which is only safe while the frame is
// live, so it happens on the capturing thread at first sight; afterwards the
// key is reused whatever happens to the code object. A code object freed and
// replaced at the same address differs in RawFrame::ident and gets a new
// entry.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/common/direct_mapped_cache.h"
#include "runtime/dlmonitor/context_tree.h"
#include "runtime/dlmonitor/string_table.h"
#include "runtime/python/python_frames.h"

namespace deepcontext::dlmonitor {

struct ResolvedPythonFrame {
  FrameKey key;
  // True when the frame's file matches a hidden pattern: such frames are
  // dropped from the innermost end of a path (the framework's own Python
  // glue between the user's line and the op, e.g. record_function.__enter__).
  bool hidden = false;
  // True when the frame is compilation work (a pattern of
  // MarkCompileFrames): paths through it hang from a [compile] phase.
  bool compile = false;
};

class PythonFrameCache {
  // Every bit of every field reaches the low bits, which pick a slot of the
  // thread's cache: the call sites of one function differ only in `lasti`,
  // and a hash that kept six of its bits there put sites 64 bytes apart in
  // one slot, where they evicted each other at every op (on a 48-layer MLP,
  // 29 % of the lookups went to the shared map, under its lock).
  struct RawFrameHash {
    size_t operator()(const python::RawFrame& f) const {
      uint64_t h = reinterpret_cast<uintptr_t>(f.code) * 0x9E3779B97F4A7C15ULL;
      h += (static_cast<uint64_t>(static_cast<uint32_t>(f.lasti)) << 32 | f.ident) *
           0xC2B2AE3D27D4EB4FULL;
      h ^= h >> 32;
      h *= 0xBF58476D1CE4E5B9ULL;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };

 public:
  // A thread's own copy of the call sites it saw last: the line of the
  // frame that calls an op changes from op to op, so nearly every op looks
  // one frame up, and the shared shards' mutex would be taken each time.
  using ThreadCache =
      DirectMappedCache<python::RawFrame, ResolvedPythonFrame, RawFrameHash, 512>;

  explicit PythonFrameCache(StringTable& strings) : strings_(strings) {}

  // [any thread; frame must be live on the calling thread]
  ResolvedPythonFrame Lookup(const python::RawFrame& frame);
  // The same, through the calling thread's cache. [the cache's thread]
  ResolvedPythonFrame Lookup(const python::RawFrame& frame, ThreadCache& local);

  // Frames whose file contains `substring` become hidden at path leaves.
  // Applies to call sites resolved after the call. [any thread]
  void HideLeafFiles(const std::string& substring);
  // The same for the frames of one function there (the qualified name or
  // its last component; empty: any). [any thread]
  void HideLeafFrames(const std::string& file_substring,
                      const std::string& function);

  // Frames whose file contains `file_substring` and whose function is
  // `function` (the qualified name, or its last component; empty: any)
  // become compilation frames. Applies to call sites resolved after the
  // call. [any thread]
  void MarkCompileFrames(const std::string& file_substring,
                         const std::string& function);

 private:
  static constexpr size_t kShards = 16;
  struct Shard {
    std::mutex mutex;
    std::unordered_map<python::RawFrame, ResolvedPythonFrame, RawFrameHash> map;
  };

  ResolvedPythonFrame Resolve(const python::RawFrame& frame);

  StringTable& strings_;
  Shard shards_[kShards];
  struct FramePattern {
    std::string file;      // a substring of the file path
    std::string function;  // empty: any function
    bool Matches(const python::FrameInfo& info) const;
  };
  std::mutex patterns_mutex_;  // guards hidden_ and compile_
  std::vector<FramePattern> hidden_;
  std::vector<FramePattern> compile_;
};

}  // namespace deepcontext::dlmonitor

// The process-wide DLMonitor instance behind the C ABI.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "runtime/dlmonitor/call_path_builder.h"
#include "runtime/dlmonitor/callback_registry.h"
#include "runtime/dlmonitor/context_tree.h"
#include "runtime/dlmonitor/forward_links.h"
#include "runtime/dlmonitor/python_frame_cache.h"
#include "runtime/dlmonitor/string_table.h"

namespace deepcontext::dlmonitor {

class Monitor {
 public:
  // The instance, created on first use and deliberately never destroyed:
  // framework threads may still emit events while static destructors run
  // at exit.
  // Inline: every event asks, and a call would cost it one more line of
  // code to fetch.
  static Monitor& Instance() {
    static Monitor* instance = new Monitor();
    return *instance;
  }

  StringTable& strings() { return strings_; }
  ContextTree& tree() { return tree_; }
  CallbackRegistry& callbacks() { return callbacks_; }
  CallPathBuilder& paths() { return paths_; }
  PythonFrameCache& python_frames() { return python_frames_; }

  // Whether the Python frame reader works in this process, and why not.
  bool python_enabled() const { return python_enabled_; }
  const std::string& python_status() const { return python_status_; }
  // dlmonitor_describe(): once native frames were enabled it also names
  // the unwinder, since the contexts then hold native frames.
  const char* description() const {
    return native_described_.load(std::memory_order_acquire)
               ? native_description_.c_str()
               : description_.c_str();
  }

  // Turns native frames on or off (CallPathBuilder::EnableNative).
  void EnableNative(bool on);

  std::atomic<int>& init_count() { return init_count_; }

 private:
  Monitor();

  // Every event reads the count and the registry's head: one cache line.
  alignas(64) std::atomic<int> init_count_{0};
  CallbackRegistry callbacks_;
  StringTable strings_;
  ContextTree tree_;
  ForwardLinks links_;
  std::string python_status_;
  bool python_enabled_ = false;
  PythonFrameCache python_frames_;
  CallPathBuilder paths_;
  std::string description_;
  std::once_flag native_once_;
  std::string native_description_;  // written once, before native_described_
  std::atomic<bool> native_described_{false};
};

}  // namespace deepcontext::dlmonitor

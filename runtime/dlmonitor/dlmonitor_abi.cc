// The C ABI of include/deepcontext/dlmonitor.h. Every entry point catches
// everything: no C++ exception may cross into framework or tool code.
#include "deepcontext/dlmonitor.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "runtime/common/hot_path.h"
#include "runtime/dlmonitor/monitor.h"

using deepcontext::dlmonitor::ContextId;
using deepcontext::dlmonitor::FrameKey;
using deepcontext::dlmonitor::kNoContext;
using deepcontext::dlmonitor::Monitor;

namespace {

bool Initialized(Monitor& monitor) {
  return monitor.init_count().load(std::memory_order_acquire) > 0;
}

bool Initialized() { return Initialized(Monitor::Instance()); }

// What a caller stored in an enum field, as an integer. A C caller may store
// any int there, and in C++ loading a value the enum does not name as the
// enum is undefined: range checks must read the bytes.
template <typename Enum>
int64_t StoredValue(const Enum& field) {
  std::underlying_type_t<Enum> raw;
  static_assert(sizeof(raw) == sizeof(field));
  std::memcpy(&raw, &field, sizeof(raw));
  return static_cast<int64_t>(raw);
}

void FillFrame(Monitor& monitor, const FrameKey& unnamed, dlmonitor_frame_t* out) {
  const FrameKey key = monitor.paths().Named(unnamed);
  out->struct_size = sizeof(dlmonitor_frame_t);
  out->kind = static_cast<dlmonitor_frame_kind_t>(key.kind);
  out->name = monitor.strings().Get(key.name);
  out->file = monitor.strings().Get(key.file);
  out->line = key.line;
}

}  // namespace

extern "C" {

dlmonitor_status_t dlmonitor_init(void) {
  try {
    Monitor::Instance().init_count().fetch_add(1, std::memory_order_acq_rel);
    return DLMONITOR_OK;
  } catch (...) {
    return DLMONITOR_ERROR_NOT_INITIALIZED;
  }
}

dlmonitor_status_t dlmonitor_finalize(void) {
  auto& count = Monitor::Instance().init_count();
  int current = count.load(std::memory_order_acquire);
  while (current > 0 &&
         !count.compare_exchange_weak(current, current - 1,
                                      std::memory_order_acq_rel)) {
  }
  return current > 0 ? DLMONITOR_OK : DLMONITOR_ERROR_NOT_INITIALIZED;
}

const char* dlmonitor_describe(void) {
  return Monitor::Instance().description();
}

dlmonitor_status_t dlmonitor_native_enable(int on) {
  try {
    Monitor::Instance().EnableNative(on != 0);
    return DLMONITOR_OK;
  } catch (...) {
    return DLMONITOR_ERROR_LIMIT_REACHED;
  }
}

dlmonitor_status_t dlmonitor_callback_register(
    dlmonitor_domain_t domain, dlmonitor_callback_t callback, void* user_data,
    dlmonitor_callback_handle_t* handle) {
  if (!Initialized()) return DLMONITOR_ERROR_NOT_INITIALIZED;
  if (callback == nullptr || handle == nullptr || domain < 0 ||
      domain >= DLMONITOR_DOMAIN_COUNT) {
    return DLMONITOR_ERROR_INVALID_ARGUMENT;
  }
  auto* registration =
      Monitor::Instance().callbacks().Register(domain, callback, user_data);
  if (registration == nullptr) return DLMONITOR_ERROR_LIMIT_REACHED;
  *handle = registration;
  return DLMONITOR_OK;
}

dlmonitor_status_t dlmonitor_callback_unregister(
    dlmonitor_callback_handle_t handle) {
  return Monitor::Instance().callbacks().Unregister(handle)
             ? DLMONITOR_OK
             : DLMONITOR_ERROR_NOT_FOUND;
}

dlmonitor_status_t dlmonitor_context_current(dlmonitor_context_t* context) {
  if (context == nullptr) return DLMONITOR_ERROR_INVALID_ARGUMENT;
  if (!Initialized()) return DLMONITOR_ERROR_NOT_INITIALIZED;
  try {
    *context = Monitor::Instance().paths().Current(DEEPCONTEXT_CALLER_FRAME());
    return DLMONITOR_OK;
  } catch (...) {
    *context = kNoContext;
    return DLMONITOR_ERROR_LIMIT_REACHED;
  }
}

dlmonitor_status_t dlmonitor_context_child(dlmonitor_context_t parent,
                                           const dlmonitor_frame_t* frame,
                                           dlmonitor_context_t* child) {
  // A kind the enum does not name could stand for anything, and one value
  // beyond it keys the runtime's own unnamed native frames
  // (kUnnamedNativeFrame): a tool's frame of that kind would be read as
  // a return address.
  if (frame == nullptr || child == nullptr || frame->struct_size < sizeof(dlmonitor_frame_t)) {
    return DLMONITOR_ERROR_INVALID_ARGUMENT;
  }
  const int64_t kind = StoredValue(frame->kind);
  if (kind < DLMONITOR_FRAME_ROOT || kind > DLMONITOR_FRAME_GPU_INSTRUCTION) {
    return DLMONITOR_ERROR_INVALID_ARGUMENT;
  }
  try {
    Monitor& monitor = Monitor::Instance();
    FrameKey key;
    key.kind = static_cast<uint32_t>(kind);
    key.name = monitor.strings().Intern(frame->name ? frame->name : "");
    key.file = monitor.strings().Intern(frame->file ? frame->file : "");
    key.line = frame->line;
    *child = monitor.tree().Child(parent, key);
    return *child == kNoContext ? DLMONITOR_ERROR_NOT_FOUND : DLMONITOR_OK;
  } catch (...) {
    return DLMONITOR_ERROR_LIMIT_REACHED;
  }
}

dlmonitor_status_t dlmonitor_context_frame(dlmonitor_context_t context,
                                           dlmonitor_frame_t* frame,
                                           dlmonitor_context_t* parent) {
  Monitor& monitor = Monitor::Instance();
  FrameKey key;
  ContextId parent_id = kNoContext;
  if (!monitor.tree().Get(context, &key, &parent_id)) {
    return DLMONITOR_ERROR_NOT_FOUND;
  }
  if (frame != nullptr) FillFrame(monitor, key, frame);
  if (parent != nullptr) *parent = parent_id;
  return DLMONITOR_OK;
}

uint64_t dlmonitor_context_count(void) {
  const ContextId end = Monitor::Instance().tree().End();
  return end > 0 ? end - 1 : 0;
}

dlmonitor_status_t dlmonitor_callpath_get(dlmonitor_context_t context,
                                          dlmonitor_frame_t* frames,
                                          size_t capacity, size_t* count) {
  if (count == nullptr || (frames == nullptr && capacity > 0)) {
    return DLMONITOR_ERROR_INVALID_ARGUMENT;
  }
  Monitor& monitor = Monitor::Instance();
  // First measure the depth, then fill from the leaf end backwards so the
  // output reads root first.
  size_t depth = 0;
  for (ContextId id = context; id != kNoContext;) {
    ContextId parent = kNoContext;
    if (!monitor.tree().Get(id, nullptr, &parent)) {
      return DLMONITOR_ERROR_NOT_FOUND;
    }
    ++depth;
    id = parent;
  }
  *count = depth;
  size_t position = depth;
  for (ContextId id = context; id != kNoContext;) {
    FrameKey key;
    ContextId parent = kNoContext;
    monitor.tree().Get(id, &key, &parent);
    --position;
    if (position < capacity) FillFrame(monitor, key, &frames[position]);
    id = parent;
  }
  return depth <= capacity ? DLMONITOR_OK : DLMONITOR_ERROR_BUFFER_TOO_SMALL;
}

DEEPCONTEXT_HOT
void dlmonitor_event_emit(dlmonitor_event_t* event) {
  if (event == nullptr) return;
  // Called twice per op: the monitor is looked up once.
  Monitor& monitor = Monitor::Instance();
  if (!Initialized(monitor)) return;
  try {
    auto& paths = monitor.paths();
    switch (event->domain) {
      case DLMONITOR_DOMAIN_FRAMEWORK_OP:
        if (event->op == nullptr) return;
        // The op stack is kept even without op callbacks: GPU API and
        // memory events need it for their context.
        // This function's frame names the adapter's: native stacks are
        // cut there, leaving out this library's own frames, and unwinds
        // start there instead of walking them.
        event->context = event->phase == DLMONITOR_PHASE_ENTER
                             ? paths.OnOpEnter(*event->op, DEEPCONTEXT_CALLER_FRAME())
                             : paths.OnOpExit(*event->op);
        break;
      case DLMONITOR_DOMAIN_MEMORY:
        if (event->memory == nullptr) return;
        if (!monitor.callbacks().HasCallbacks(event->domain)) return;
        // A free belongs to the allocation it ends, which tools find by
        // address; the freeing thread's context would only cost time.
        if (event->memory->bytes < 0 ||
            (dlmonitor_memory_flags(event->memory) & DLMONITOR_MEMORY_RESERVED) != 0) {
          event->context = 0;
          break;
        }
        event->context =
            (dlmonitor_memory_flags(event->memory) & DLMONITOR_MEMORY_PREEXISTING) != 0
                ? paths.AllocatedBefore(DEEPCONTEXT_CALLER_FRAME())
                : paths.Current(DEEPCONTEXT_CALLER_FRAME());
        break;
      case DLMONITOR_DOMAIN_GPU_API:
        if (!monitor.callbacks().HasCallbacks(event->domain)) return;
        event->context = paths.Current(DEEPCONTEXT_CALLER_FRAME());
        break;
      default:
        return;
    }
    if (monitor.callbacks().HasCallbacks(event->domain)) {
      monitor.callbacks().Dispatch(*event);
    }
  } catch (...) {
    // Out of memory inside a framework callback: drop the event rather
    // than take the program down.
  }
}

dlmonitor_status_t dlmonitor_python_hide_leaf_files(const char* substring) {
  if (substring == nullptr) return DLMONITOR_ERROR_INVALID_ARGUMENT;
  try {
    Monitor::Instance().python_frames().HideLeafFiles(substring);
    return DLMONITOR_OK;
  } catch (...) {
    return DLMONITOR_ERROR_LIMIT_REACHED;
  }
}

dlmonitor_status_t dlmonitor_python_hide_leaf_frames(const char* file_substring,
                                                     const char* function) {
  if (file_substring == nullptr || file_substring[0] == '\0') {
    return DLMONITOR_ERROR_INVALID_ARGUMENT;
  }
  try {
    Monitor::Instance().python_frames().HideLeafFrames(
        file_substring, function != nullptr ? function : "");
    return DLMONITOR_OK;
  } catch (...) {
    return DLMONITOR_ERROR_LIMIT_REACHED;
  }
}

dlmonitor_status_t dlmonitor_python_mark_compile_frames(const char* file_substring,
                                                       const char* function) {
  if (file_substring == nullptr || file_substring[0] == '\0') {
    return DLMONITOR_ERROR_INVALID_ARGUMENT;
  }
  try {
    Monitor::Instance().python_frames().MarkCompileFrames(
        file_substring, function != nullptr ? function : "");
    return DLMONITOR_OK;
  } catch (...) {
    return DLMONITOR_ERROR_LIMIT_REACHED;
  }
}

}  // extern "C"

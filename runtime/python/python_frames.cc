#include "runtime/python/python_frames.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>

#include "runtime/common/hot_path.h"
#include "runtime/python/frame_walker.h"
#include "runtime/python/object_access.h"
#include "runtime/python/version_support.h"

namespace deepcontext::python {
namespace {

using GetThreadStateFunction = const void* (*)();
using Addr2LineFunction = int (*)(const void* code, int byte_offset);
using GetVersionFunction = const char* (*)();

// Everything the hot path needs, filled once by Initialize and published
// through `g_active`; never modified afterwards.
struct ReaderState {
  const FrameLayout* layout = nullptr;
  WalkFunction walk = nullptr;
  GetThreadStateFunction get_thread_state = nullptr;
  Addr2LineFunction addr2line = nullptr;
  const void* code_type = nullptr;
  const void* unicode_type = nullptr;
  char version[32] = {};
};

ReaderState g_state;
std::atomic<const ReaderState*> g_active{nullptr};

template <typename T>
T LookUp(const char* name) {
  return reinterpret_cast<T>(dlsym(RTLD_DEFAULT, name));
}

// The running interpreter's version: Py_Version (3.11+) or the text of
// Py_GetVersion() (which formats into a static buffer; no Python objects).
StatusOr<PythonVersion> DetectVersion() {
  if (const auto* hex = LookUp<const unsigned long*>("Py_Version")) {
    return DecodeHexVersion(*hex);
  }
  const auto get_version = LookUp<GetVersionFunction>("Py_GetVersion");
  if (get_version == nullptr) {
    return Status::Error("not a Python process (Py_GetVersion not found)");
  }
  const char* text = get_version();
  PythonVersion version;
  if (text == nullptr || !ParseVersionString(text, &version)) {
    return Status::Error(std::string("unrecognised Python version \"") +
                         (text ? text : "") + "\"");
  }
  return version;
}

Status DoInitialize() {
  const StatusOr<PythonVersion> version = DetectVersion();
  if (!version.ok()) return version.status();
  const StatusOr<const FrameLayout*> found = FindLayout(*version);
  if (!found.ok()) return found.status();
  const FrameLayout* layout = *found;
  const std::string version_text = FormatVersion(*version);
  if (layout->debug_free_threaded >= 0) {
    const auto* runtime = LookUp<const void*>("_PyRuntime");
    if (runtime == nullptr) {
      return Status::Error("CPython " + version_text +
                           ": _PyRuntime not found");
    }
    Status verified = VerifyDebugOffsets(*layout, runtime);
    if (!verified.ok()) return verified;
  }

  ReaderState& state = g_state;
  state.layout = layout;
  state.walk = WalkerFor(*layout);
  state.get_thread_state =
      LookUp<GetThreadStateFunction>("PyGILState_GetThisThreadState");
  state.addr2line = LookUp<Addr2LineFunction>("PyCode_Addr2Line");
  state.code_type = LookUp<const void*>("PyCode_Type");
  state.unicode_type = LookUp<const void*>("PyUnicode_Type");
  const char* missing = state.get_thread_state == nullptr
                            ? "PyGILState_GetThisThreadState"
                        : state.addr2line == nullptr ? "PyCode_Addr2Line"
                        : state.code_type == nullptr ? "PyCode_Type"
                        : state.unicode_type == nullptr ? "PyUnicode_Type"
                                                        : nullptr;
  if (missing != nullptr || state.walk == nullptr) {
    return Status::Error("CPython " + version_text + ": symbol " +
                         (missing ? missing : "walker") + " not found");
  }
  std::snprintf(state.version, sizeof(state.version), "%s",
                version_text.c_str());
  g_active.store(&state, std::memory_order_release);
  return Status::Ok();
}

}  // namespace

Status Initialize() {
  // A function-local static runs DoInitialize exactly once, even when
  // several threads race here.
  static const Status result = DoInitialize();
  return result;
}

const char* VersionString() {
  const ReaderState* state = g_active.load(std::memory_order_acquire);
  return state != nullptr ? state->version : "";
}

DEEPCONTEXT_HOT
int CaptureCurrentThread(RawFrame* out, int max, const void** thread_state) {
  if (thread_state != nullptr) *thread_state = nullptr;
  const ReaderState* state = g_active.load(std::memory_order_acquire);
  if (state == nullptr || out == nullptr || max <= 0) return 0;
  const void* current = state->get_thread_state();
  if (current == nullptr) return 0;
  if (thread_state != nullptr) *thread_state = current;
  return state->walk(*state->layout, state->code_type, current, out, max);
}

DEEPCONTEXT_HOT
int CaptureThread(const void* thread_state, RawFrame* out, int max) {
  const ReaderState* state = g_active.load(std::memory_order_acquire);
  if (state == nullptr || thread_state == nullptr || out == nullptr || max <= 0) return 0;
  return state->walk(*state->layout, state->code_type, thread_state, out, max);
}

DEEPCONTEXT_HOT
const void* InnermostFrame(const void* thread_state) {
  const ReaderState* state = g_active.load(std::memory_order_acquire);
  if (state == nullptr || thread_state == nullptr) return nullptr;
  return InnermostFrameRecord(*state->layout, thread_state);
}

bool Resolve(const RawFrame& frame, FrameInfo* out) {
  const ReaderState* state = g_active.load(std::memory_order_acquire);
  if (state == nullptr || out == nullptr) return false;
  const FrameLayout& layout = *state->layout;
  if (!HasType(layout, frame.code, state->code_type) ||
      CodeIdent(layout, frame.code) != frame.ident) {
    return false;
  }
  const int32_t name_offset =
      layout.code_qualname >= 0 ? layout.code_qualname : layout.code_name;
  out->function.clear();
  if (!AppendUnicodeUtf8(layout, state->unicode_type,
                         LoadPointer(frame.code, name_offset),
                         &out->function)) {
    out->function = "?";
  }
  out->file.clear();
  if (!AppendUnicodeUtf8(layout, state->unicode_type,
                         LoadPointer(frame.code, layout.code_filename),
                         &out->file)) {
    out->file = "?";
  }
  out->line = state->addr2line(frame.code, frame.lasti);
  return true;
}

}  // namespace deepcontext::python

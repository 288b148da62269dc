// Test probe: native stack capture spliced with the Python frames, exposed to
// Python through ctypes (check_splice.py runs it under each interpreter).
//
// ctypes releases the GIL around calls, as torch does around ops, and calls
// back into Python through libffi closures: a Python function called from a
// native chain called from Python gives a stack with several eval-loop
// activations and native frames between them.
#include <algorithm>
#include <cstdint>
#include <string>

#include "runtime/native/module_map.h"
#include "runtime/native/native_stack.h"
#include "runtime/native/python_splice.h"
#include "runtime/native/symbolizer.h"
#include "runtime/python/python_frames.h"

namespace {

namespace native = deepcontext::native;
namespace python = deepcontext::python;

using Callback = void (*)();

native::InterpreterRanges g_ranges;

#define SPLICE_PROBE_BARRIER() asm volatile("" ::: "memory")

}  // namespace

// The chain must keep its frames (no inlining, no tail calls): see the
// compile options in CMakeLists.txt.
namespace splice_probe {

__attribute__((noinline)) void c(Callback callback) {
  callback();
  SPLICE_PROBE_BARRIER();
}

__attribute__((noinline)) void b(Callback callback) {
  c(callback);
  SPLICE_PROBE_BARRIER();
}

__attribute__((noinline)) void a(Callback callback) {
  b(callback);
  SPLICE_PROBE_BARRIER();
}

}  // namespace splice_probe

extern "C" {

// Initializes the Python reader and finds the interpreter's eval loop.
// Returns 1 on success; `why` receives the reason for a failure.
__attribute__((visibility("default"))) int dc_splice_probe_init(char* why,
                                                                int length) {
  std::string reason;
  const deepcontext::Status initialized = python::Initialize();
  if (!initialized.ok()) {
    reason = initialized.message();
  } else if (!g_ranges.Detect()) {
    reason = "_PyEval_EvalFrameDefault not found";
  }
  if (why != nullptr && length > 0) {
    const size_t n = std::min(reason.size(), static_cast<size_t>(length - 1));
    reason.copy(why, n);
    why[n] = '\0';
  }
  return reason.empty() ? 1 : 0;
}

// Runs a() -> b() -> c() -> callback().
__attribute__((visibility("default"), noinline)) void dc_splice_probe_chain(
    Callback callback) {
  splice_probe::a(callback);
  SPLICE_PROBE_BARRIER();
}

// Captures both stacks, splices them and writes one line per merged frame,
// outermost first: "P\tfunction\tline" or "N\tfunction". Returns the frame
// count, or -1 when `buffer` is too small.
__attribute__((visibility("default"), noinline)) int dc_splice_probe_capture(
    char* buffer, int length) {
  static thread_local uintptr_t pcs[native::kMaxNativeDepth];
  static thread_local python::RawFrame frames[256];
  const int native_count =
      native::CaptureNativeStack(pcs, native::kMaxNativeDepth, 0);
  const int python_count = python::CaptureCurrentThread(frames, 256);
  native::NativeFrameClass classes[native::kMaxNativeDepth];
  g_ranges.ClassifyAll(pcs, native_count, classes);
  bool entry[256];
  for (int i = 0; i < python_count; ++i) entry[i] = frames[i].entry;
  native::SplicedFrame out[native::kMaxNativeDepth + 256];
  const int total = native::SplicePythonFrames(
      classes, native_count, entry, python_count, native::SpliceOptions{},
      out, native::kMaxNativeDepth + 256);
  native::Symbolizer symbolizer(native::ModuleMap::Snapshot());
  std::string text;
  python::FrameInfo info;
  for (int i = 0; i < total; ++i) {
    if (out[i].source == native::SplicedFrame::Source::kPython) {
      python::Resolve(frames[out[i].index], &info);
      text += "P\t" + info.function + "\t" + std::to_string(info.line) + "\n";
    } else {
      text += "N\t" + symbolizer.Symbolize(pcs[out[i].index]).DisplayName() +
              "\n";
    }
  }
  if (buffer == nullptr || text.size() + 1 > static_cast<size_t>(length)) {
    return -1;
  }
  std::copy(text.begin(), text.end(), buffer);
  buffer[text.size()] = '\0';
  return total;
}

}  // extern "C"

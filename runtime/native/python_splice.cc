#include "runtime/native/python_splice.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>

#include "runtime/native/module_map.h"

namespace deepcontext::native {
namespace {

// Writes frames innermost first; the caller reverses at the end.
struct ReversedWriter {
  SplicedFrame* out;
  int capacity;
  int count = 0;

  bool full() const { return count >= capacity; }
  void Add(SplicedFrame::Source source, int index) {
    if (!full()) out[count++] = SplicedFrame{source, index};
  }
};

// Emits the innermost not yet used Python activation, ending before
// `*python_end`, innermost frame first.
void EmitActivation(const bool* python_entry, int* python_end,
                    ReversedWriter* writer) {
  int start = *python_end - 1;
  while (start > 0 && !python_entry[start]) --start;
  for (int i = *python_end - 1; i >= start; --i) {
    writer->Add(SplicedFrame::Source::kPython, i);
  }
  *python_end = start;
}

}  // namespace

int SplicePythonFrames(const NativeFrameClass* classes, int native_count,
                       const bool* python_entry, int python_count,
                       const SpliceOptions& options, SplicedFrame* out,
                       int capacity) {
  if (out == nullptr || capacity <= 0) return 0;
  if (classes == nullptr) native_count = 0;
  if (python_entry == nullptr) python_count = 0;
  ReversedWriter writer{out, capacity};
  int python_end = python_count;
  for (int n = native_count - 1; n >= 0 && !writer.full(); --n) {
    switch (classes[n]) {
      case NativeFrameClass::kEvalLoop:
        if (python_end > 0) {
          EmitActivation(python_entry, &python_end, &writer);
        } else {
          // A loop activation whose Python frames the reader did not see
          // (cut by its depth limit): show the C frame rather than nothing.
          writer.Add(SplicedFrame::Source::kNative, n);
        }
        break;
      case NativeFrameClass::kInterpreter:
        if (options.keep_interpreter_frames) {
          writer.Add(SplicedFrame::Source::kNative, n);
        }
        break;
      case NativeFrameClass::kOther:
        writer.Add(SplicedFrame::Source::kNative, n);
        break;
    }
  }
  // Python frames outside every loop activation the unwinder reached: the
  // native stack was cut on the outer side, so they are the outermost.
  while (python_end > 0 && !writer.full()) {
    EmitActivation(python_entry, &python_end, &writer);
  }
  std::reverse(out, out + writer.count);
  return writer.count;
}

bool FindFunctionRange(const char* symbol, uintptr_t* begin, uintptr_t* end) {
  void* address = dlsym(RTLD_DEFAULT, symbol);
  if (address == nullptr) return false;
  Dl_info info;
  ElfW(Sym)* entry = nullptr;
  if (dladdr1(address, &info, reinterpret_cast<void**>(&entry),
              RTLD_DL_SYMENT) == 0 ||
      entry == nullptr || entry->st_size == 0) {
    return false;
  }
  *begin = reinterpret_cast<uintptr_t>(address);
  *end = *begin + entry->st_size;
  return true;
}

bool InterpreterRanges::Detect() {
  uintptr_t begin = 0;
  uintptr_t end = 0;
  if (!FindFunctionRange("_PyEval_EvalFrameDefault", &begin, &end)) {
    return false;
  }
  AddEvalRange(begin, end);
  const ModuleMap modules = ModuleMap::Snapshot();
  if (const Module* module = modules.Find(begin)) {
    SetInterpreterRange(module->start, module->end);
  }
  return true;
}

bool InterpreterRanges::AddEvalRange(uintptr_t begin, uintptr_t end) {
  if (eval_count_ >= kMaxEvalRanges || begin >= end) return false;
  eval_[eval_count_++] = Range{begin, end};
  return true;
}

void InterpreterRanges::SetInterpreterRange(uintptr_t begin, uintptr_t end) {
  interpreter_ = Range{begin, end};
}

NativeFrameClass InterpreterRanges::Classify(uintptr_t pc) const {
  if (pc == 0) return NativeFrameClass::kOther;
  const uintptr_t call_site = pc - 1;
  for (int i = 0; i < eval_count_; ++i) {
    if (call_site >= eval_[i].begin && call_site < eval_[i].end) {
      return NativeFrameClass::kEvalLoop;
    }
  }
  if (call_site >= interpreter_.begin && call_site < interpreter_.end) {
    return NativeFrameClass::kInterpreter;
  }
  return NativeFrameClass::kOther;
}

void InterpreterRanges::ClassifyAll(const uintptr_t* pcs, int count,
                                    NativeFrameClass* classes) const {
  for (int i = 0; i < count; ++i) classes[i] = Classify(pcs[i]);
}

}  // namespace deepcontext::native

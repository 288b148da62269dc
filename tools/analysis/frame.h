// The identity of one calling-context frame as the offline views see it,
// independent of which profile (and which string table) it came from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "format/profile_data.h"

namespace deepcontext::analysis {

// Index into ProfileTree::frames(). Two tree nodes share a FrameId exactly
// when their (kind, name, file, line) are equal, which lets the flat and
// bottom-up views aggregate by plain integer keys.
using FrameId = uint32_t;

// Sentinel for "no frame", e.g. a hotspot without any Python caller.
inline constexpr FrameId kNoFrame = UINT32_MAX;

// What a node stands for: its kind and source location. Strings are copied
// out of the profile so that frames from several profiles compare equal.
struct Frame {
  format::FrameKind kind = format::FrameKind::kRoot;
  std::string name;
  std::string file;
  uint32_t line = 0;

  bool operator==(const Frame& other) const = default;
};

// Hash over all four identity fields, for unordered containers of Frame.
struct FrameHash {
  size_t operator()(const Frame& frame) const;
};

// Returns the label a human reads for a frame: the function name for Python
// frames, the operator or kernel name, "[forward]" for phases, "thread main"
// for threads. Never empty: unnamed frames show their kind, e.g. "<thread>".
// Mangled C++ names (native frames, GPU kernels: "_ZN5cudnn...") are shown
// demangled; kernels without their "void" and parameter list
// ("cudnn::bn_bw_1C11_kernel_new<float, float, 512, true, 1>").
std::string DisplayName(const Frame& frame);

// True for source files of installed packages (site-/dist-packages), the
// standard library and frozen modules: code the user does not edit, so
// "where the user launched it" skips them.
bool IsLibraryFile(std::string_view file);

// True for Python code a compiler generated, which the user does not edit
// either: torch.compile's Inductor modules (<cache>/torchinductor_<user>/
// <xy>/c<xy...>.py, a 52-character hash name in a folder named by its
// second and third characters).
bool IsGeneratedCodeFile(std::string_view file);

// The user's own code: neither library nor generated.
inline bool IsUserCodeFile(std::string_view file) {
  return !IsLibraryFile(file) && !IsGeneratedCodeFile(file);
}

// Returns the demangled form of an Itanium-ABI mangled name ("_Z...", as
// nvcc and g++ emit), or name unchanged when it is not one or does not
// demangle.
std::string DemangledName(const std::string& name);

// True for torch's nn.Module call wrappers (Module._call_impl,
// Module._wrapped_call_impl in torch/nn/modules/module.py): every module
// call passes through them, so they double the depth of a model's tree
// without telling anything. Reports fold them into their callers.
bool IsFrameworkWrapper(const Frame& frame);

// True for the Python frames of torch.compile's machinery in an installed
// torch or Triton: Dynamo's frame evaluation and tracing, AOTAutograd's
// runtime wrappers, Inductor's compiler and kernel launchers,
// autograd.Function.apply, Triton's launchers. Between the line that calls
// a compiled module and the line of Inductor's generated code that ran a
// kernel they are a dozen frames a user cannot act on; reports fold them
// into their callers. Generated code (/tmp/torchinductor_*) is not theirs.
bool IsCompilerGlue(const Frame& frame);

// True for the profiler's own frames that op callbacks run under
// (at::RecordFunction::runStartCallbacks, c10::Dispatcher::runRecordFunction
// and the like, seen in native stacks): they are how DeepContext observes
// an op, not the program's work. Reports hide them.
bool IsProfilerFrame(const Frame& frame);

// True for nodes that only group work (root, process, thread, phase) rather
// than being code that runs; such nodes are never reported as hotspots.
bool IsStructuralKind(format::FrameKind kind);

}  // namespace deepcontext::analysis

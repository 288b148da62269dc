#include "tools/analysis/frame.h"

#include <cxxabi.h>

#include <array>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string_view>

namespace deepcontext::analysis {

size_t FrameHash::operator()(const Frame& frame) const {
  // Boost-style combine: cheap, and good enough for the few distinct frames
  // a profile holds.
  size_t seed = std::hash<std::string>()(frame.name);
  auto combine = [&seed](size_t value) {
    seed ^= value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
  };
  combine(std::hash<std::string>()(frame.file));
  combine(std::hash<uint32_t>()(frame.line));
  combine(static_cast<size_t>(frame.kind));
  return seed;
}

namespace {

// A demangled kernel without what every kernel has: the "void" return type
// and the parameter list, which the template arguments already imply
// ("void k<float>(float*, int)" -> "k<float>"), as Nsight Systems shows them.
std::string KernelName(std::string name) {
  if (name.starts_with("void ")) name.erase(0, 5);
  if (!name.empty() && name.back() == ')') {
    int depth = 0;
    for (size_t i = name.size(); i-- > 0;) {
      if (name[i] == ')') ++depth;
      if (name[i] == '(' && --depth == 0) {
        if (i > 0) name.erase(i);
        break;
      }
    }
  }
  return name;
}

}  // namespace

bool IsLibraryFile(std::string_view file) {
  return file.find("/site-packages/") != std::string_view::npos ||
         file.find("/dist-packages/") != std::string_view::npos ||
         file.find("/lib/python3") != std::string_view::npos ||
         file.starts_with("<frozen ");
}

bool IsGeneratedCodeFile(std::string_view file) {
  if (file.find("/torchinductor_") != std::string_view::npos) return true;
  const size_t slash = file.rfind('/');
  if (slash == std::string_view::npos || slash < 3 || file[slash - 3] != '/') return false;
  const std::string_view name = file.substr(slash + 1);
  if (name.size() != 52 + 3 || !name.ends_with(".py") || name[0] != 'c') return false;
  if (file.substr(slash - 2, 2) != name.substr(1, 2)) return false;
  for (char c : name.substr(0, 52)) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

std::string DisplayName(const Frame& frame) {
  using format::FrameKind;
  if (frame.name.empty()) {
    if (frame.kind == FrameKind::kRoot) return "<root>";
    return std::string("<") + format::FrameKindName(frame.kind) + ">";
  }
  switch (frame.kind) {
    case FrameKind::kThread:
      // The runtime names threads "main thread" and "thread <tid> (<name>)";
      // bare names ("main", a Python thread's name) get the word once.
      if (frame.name.starts_with("thread ") ||
          frame.name.ends_with(" thread")) {
        return frame.name;
      }
      return "thread " + frame.name;
    case FrameKind::kPhase:
      // The runtime may or may not store the brackets; show them exactly once.
      if (frame.name.front() == '[' && frame.name.back() == ']') {
        return frame.name;
      }
      return "[" + frame.name + "]";
    case FrameKind::kGpuKernel:
      return KernelName(DemangledName(frame.name));
    case FrameKind::kNativeFrame:
    case FrameKind::kGpuApi:
      return DemangledName(frame.name);
    default:
      return frame.name;
  }
}

std::string DemangledName(const std::string& name) {
  // Mangled names start with "_Z"; CUDA kernels of some toolchains carry a
  // "__device_stub_" or a leading extra underscore ("__Z").
  std::string_view view = name;
  if (view.starts_with("__Z")) view.remove_prefix(1);
  if (!view.starts_with("_Z")) return name;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(std::string(view).c_str(), nullptr, nullptr, &status),
      &std::free);
  if (status != 0 || demangled == nullptr) return name;
  return demangled.get();
}

bool IsFrameworkWrapper(const Frame& frame) {
  if (frame.kind != format::FrameKind::kPythonFrame) return false;
  // The file is checked so that a user's own _call_impl is never hidden.
  if (!frame.file.ends_with("torch/nn/modules/module.py")) return false;
  std::string_view name = frame.name;
  if (size_t dot = name.rfind('.'); dot != std::string_view::npos) {
    name.remove_prefix(dot + 1);
  }
  return name == "_call_impl" || name == "_wrapped_call_impl";
}

bool IsCompilerGlue(const Frame& frame) {
  if (frame.kind != format::FrameKind::kPythonFrame) return false;
  // Only installed copies: a user's own "torch/_dynamo" checkout stays.
  if (!IsLibraryFile(frame.file)) return false;
  // Dynamo, AOTAutograd, Inductor, and what their tracing runs through
  // (fake tensors, FX, decompositions, dispatch modes, compile-time
  // instrumentation wrappers).
  static constexpr std::array<std::string_view, 20> kGlue = {
      "/torch/_dynamo/",          "/torch/_functorch/",
      "/torch/_inductor/",        "/torch/autograd/function.py",
      "/torch/_compile.py",       "/torch/_guards.py",
      "/torch/_subclasses/",      "/torch/fx/",
      "/torch/_decomp/",          "/torch/_refs/",
      "/torch/_prims/",           "/torch/_prims_common/",
      "/torch/_higher_order_ops/", "/torch/_library/",
      "/torch/_utils_internal.py", "/torch/utils/_stats.py",
      "/torch/utils/_python_dispatch.py",
      "/triton/runtime/",         "/triton/backends/",
      "/triton/compiler/"};
  for (std::string_view glue : kGlue) {
    if (frame.file.find(glue) != std::string::npos) return true;
  }
  // torch.compile's backend entry point lives in torch/__init__.py.
  return frame.file.ends_with("/torch/__init__.py") &&
         frame.name.starts_with("_TorchCompileInductorWrapper.");
}

bool IsProfilerFrame(const Frame& frame) {
  if (frame.kind != format::FrameKind::kNativeFrame) return false;
  // Mangled names hold their identifiers verbatim: most frames are ruled
  // out without demangling them.
  const std::string& raw = frame.name;
  if (raw.find("RecordFunction") == std::string::npos &&
      raw.find("deepcontext") == std::string::npos &&
      raw.find("dlmonitor") == std::string::npos) {
    return false;
  }
  // Native frames may be mangled or already demangled by the symbolizer.
  const std::string name = DemangledName(raw);
  static constexpr std::array<std::string_view, 2> kProfilerScopes = {
      "at::RecordFunction::", "c10::Dispatcher::runRecordFunction"};
  for (std::string_view scope : kProfilerScopes) {
    if (name.find(scope) != std::string::npos) return true;
  }
  // The runtime's and the adapter's own functions, should an unwinder step
  // through them.
  return name.find("deepcontext::") != std::string::npos ||
         name.starts_with("dlmonitor_") || name.starts_with("deepcontext_");
}

bool IsStructuralKind(format::FrameKind kind) {
  using format::FrameKind;
  return kind == FrameKind::kRoot || kind == FrameKind::kProcess ||
         kind == FrameKind::kThread || kind == FrameKind::kPhase;
}

}  // namespace deepcontext::analysis

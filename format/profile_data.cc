#include "format/profile_data.h"

namespace deepcontext::format {

const char* FrameKindName(FrameKind kind) {
  switch (kind) {
    case FrameKind::kRoot:
      return "root";
    case FrameKind::kThread:
      return "thread";
    case FrameKind::kPythonFrame:
      return "python";
    case FrameKind::kOperator:
      return "operator";
    case FrameKind::kPhase:
      return "phase";
    case FrameKind::kUserScope:
      return "scope";
    case FrameKind::kNativeFrame:
      return "native";
    case FrameKind::kGpuApi:
      return "gpu_api";
    case FrameKind::kGpuKernel:
      return "gpu_kernel";
    case FrameKind::kGpuMemcpy:
      return "gpu_memcpy";
    case FrameKind::kGpuMemset:
      return "gpu_memset";
    case FrameKind::kGpuSync:
      return "gpu_sync";
    case FrameKind::kProcess:
      return "process";
    case FrameKind::kGpuInstruction:
      return "gpu_instruction";
  }
  // Reachable only through a cast of an out-of-range byte.
  return "unknown";
}

std::string Profile::Metadata(const std::string& key) const {
  for (const auto& [k, v] : metadata) {
    if (k == key) return v;
  }
  return "";
}

}  // namespace deepcontext::format

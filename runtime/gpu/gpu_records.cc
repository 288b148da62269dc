#include "runtime/gpu/gpu_records.h"

namespace deepcontext::gpu {

std::string_view CopyKindName(CopyKind kind) {
  switch (kind) {
    case CopyKind::kHostToDevice:
      return "HtoD";
    case CopyKind::kDeviceToHost:
      return "DtoH";
    case CopyKind::kDeviceToDevice:
      return "DtoD";
    case CopyKind::kHostToHost:
      return "HtoH";
    case CopyKind::kPeerToPeer:
      return "PtoP";
    case CopyKind::kUnknown:
      break;
  }
  return "unknown";
}

std::string_view SyncKindName(SyncKind kind) {
  switch (kind) {
    case SyncKind::kEvent:
      return "event";
    case SyncKind::kStreamWaitEvent:
      return "stream wait event";
    case SyncKind::kStream:
      return "stream";
    case SyncKind::kContext:
      return "context";
    case SyncKind::kUnknown:
      break;
  }
  return "unknown";
}

}  // namespace deepcontext::gpu

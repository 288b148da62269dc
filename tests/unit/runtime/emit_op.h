// Test helpers: report a framework op or an allocator event through the
// public DLMonitor ABI, as a framework adapter does.
#pragma once

#include <cstdint>

#include "deepcontext/dlmonitor.h"

namespace deepcontext::testing {

inline void EmitOp(const char* name, uint64_t op_id, dlmonitor_phase_t phase) {
  dlmonitor_op_data_t op{};
  op.struct_size = sizeof(op);
  op.framework = DLMONITOR_FRAMEWORK_PYTORCH;
  op.kind = DLMONITOR_OP_OPERATOR;
  op.name = name;
  op.op_id = op_id;
  op.sequence_number = -1;
  dlmonitor_event_t event{};
  event.struct_size = sizeof(event);
  event.domain = DLMONITOR_DOMAIN_FRAMEWORK_OP;
  event.phase = phase;
  event.op = &op;
  dlmonitor_event_emit(&event);
}

// An allocation (bytes > 0) or free (bytes < 0) at `address` on `device`.
inline void EmitMemory(int32_t device, uintptr_t address, int64_t bytes) {
  dlmonitor_memory_data_t memory{};
  memory.struct_size = sizeof(memory);
  memory.device = device;
  memory.address = reinterpret_cast<const void*>(address);
  memory.bytes = bytes;
  dlmonitor_event_t event{};
  event.struct_size = sizeof(event);
  event.domain = DLMONITOR_DOMAIN_MEMORY;
  event.phase = DLMONITOR_PHASE_INSTANT;
  event.memory = &memory;
  dlmonitor_event_emit(&event);
}

}  // namespace deepcontext::testing

// Test helper: reports a framework op through the public DLMonitor ABI, as a
// framework adapter does.
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

}  // namespace deepcontext::testing

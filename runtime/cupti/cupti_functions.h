// The CUPTI entry points the backend uses, resolved by CuptiLibrary. This is
// the only header of the runtime that includes the vendor's cupti.h;
// include it from the CUPTI backend's .cc files only, never from headers.
#pragma once

#include <cupti.h>

namespace deepcontext::cupti {

struct CuptiFunctions {
  decltype(&::cuptiGetVersion) get_version = nullptr;
  decltype(&::cuptiGetResultString) get_result_string = nullptr;
  decltype(&::cuptiSubscribe) subscribe = nullptr;
  decltype(&::cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&::cuptiEnableDomain) enable_domain = nullptr;
  decltype(&::cuptiEnableCallback) enable_callback = nullptr;
  decltype(&::cuptiActivityEnable) activity_enable = nullptr;
  decltype(&::cuptiActivityDisable) activity_disable = nullptr;
  decltype(&::cuptiActivityRegisterCallbacks) activity_register_callbacks = nullptr;
  decltype(&::cuptiActivityFlushAll) activity_flush_all = nullptr;
  decltype(&::cuptiActivityGetNextRecord) activity_get_next_record = nullptr;
  decltype(&::cuptiActivityGetNumDroppedRecords) activity_get_num_dropped_records =
      nullptr;
  decltype(&::cuptiGetCallbackName) get_callback_name = nullptr;
  decltype(&::cuptiGetGraphNodeId) get_graph_node_id = nullptr;
  decltype(&::cuptiFinalize) finalize = nullptr;
  decltype(&::cuptiGetTimestamp) get_timestamp = nullptr;
  // Optional: absent from older libraries; nullptr then.
  // cuptiSubscribe_v2 names the client already subscribed when subscribing
  // fails.
  decltype(&::cuptiSubscribe_v2) subscribe_v2 = nullptr;
  // The device of a context, for the host-wide claim on its performance
  // monitors (runtime/gpu/counter_claims.h).
  decltype(&::cuptiGetDeviceId) get_device_id = nullptr;
  // To tell CUPTI that the activity buffers it is given are cleared already.
  decltype(&::cuptiActivitySetAttribute) activity_set_attribute = nullptr;
  // cuptiGetGraphExecId (CUDA 12.3+; spelled out so that older headers
  // build): the id an executable graph's node ids start with
  // (graph_child_nodes.h).
  CUptiResult (*get_graph_exec_id)(CUgraphExec, uint32_t*) = nullptr;
};

}  // namespace deepcontext::cupti

// The call-path builder's test fixture: a builder without Python (a C++
// test process has no interpreter) over its own tree, strings and links,
// with ops made to order and contexts read back as paths.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "runtime/dlmonitor/call_path_builder.h"

namespace deepcontext::dlmonitor {

class CallPathBuilderTest : public ::testing::Test {
 protected:
  CallPathBuilderTest()
      : python_(strings_),
        builder_(tree_, strings_, links_, python_, /*python_enabled=*/false) {}

  dlmonitor_op_data_t Op(const char* name, dlmonitor_op_kind_t kind,
                         int64_t seq = -1, uint64_t thread = 1,
                         uint64_t forward_thread = 0) {
    dlmonitor_op_data_t op{};
    op.struct_size = sizeof(op);
    op.kind = kind;
    op.name = name;
    op.op_id = next_id_++;
    op.sequence_number = seq;
    op.thread_id = thread;
    op.forward_thread_id = forward_thread;
    return op;
  }

  // "thread main thread/[forward]/aten::linear" style path of a context.
  std::string Path(ContextId id) {
    std::string path;
    while (id != kNoContext && id != kRootContext) {
      FrameKey key;
      ContextId parent = kNoContext;
      if (!tree_.Get(id, &key, &parent)) return "<invalid>";
      key = builder_.Named(key);
      std::string name = strings_.Get(key.name);
      if (key.kind == DLMONITOR_FRAME_THREAD) name = "thread";
      path = path.empty() ? name : name + "/" + path;
      id = parent;
    }
    return path;
  }

  StringTable strings_;
  ContextTree tree_;
  ForwardLinks links_;
  PythonFrameCache python_;
  CallPathBuilder builder_;
  uint64_t next_id_ = 1;
};

}  // namespace deepcontext::dlmonitor

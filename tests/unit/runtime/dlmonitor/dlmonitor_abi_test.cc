// The C ABI as a third-party tool sees it.
#include "deepcontext/dlmonitor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/dlmonitor/context_tree.h"
#include "tests/unit/runtime/emit_op.h"

namespace {

struct Seen {
  std::vector<dlmonitor_context_t> enter;
  std::vector<dlmonitor_context_t> exit;
};

void OnOp(const dlmonitor_event_t* event, void* user_data) {
  auto* seen = static_cast<Seen*>(user_data);
  (event->phase == DLMONITOR_PHASE_ENTER ? seen->enter : seen->exit)
      .push_back(event->context);
}

using deepcontext::testing::EmitOp;

TEST(DlmonitorAbi, RegisterEmitAndReadCallPaths) {
  ASSERT_EQ(dlmonitor_init(), DLMONITOR_OK);
  Seen seen;
  dlmonitor_callback_handle_t handle = nullptr;
  ASSERT_EQ(dlmonitor_callback_register(DLMONITOR_DOMAIN_FRAMEWORK_OP, &OnOp,
                                        &seen, &handle),
            DLMONITOR_OK);
  EmitOp("outer_op", 1, DLMONITOR_PHASE_ENTER);
  EmitOp("inner_op", 2, DLMONITOR_PHASE_ENTER);
  dlmonitor_context_t current = 0;
  ASSERT_EQ(dlmonitor_context_current(&current), DLMONITOR_OK);
  EmitOp("inner_op", 2, DLMONITOR_PHASE_EXIT);
  EmitOp("outer_op", 1, DLMONITOR_PHASE_EXIT);

  ASSERT_EQ(seen.enter.size(), 2u);
  ASSERT_EQ(seen.exit.size(), 2u);
  EXPECT_EQ(seen.enter[1], current);
  EXPECT_EQ(seen.exit[0], seen.enter[1]);  // exit reports the op's context

  dlmonitor_frame_t frames[8];
  size_t count = 0;
  ASSERT_EQ(dlmonitor_callpath_get(current, frames, 8, &count), DLMONITOR_OK);
  ASSERT_EQ(count, 4u);  // root, thread, outer, inner
  EXPECT_EQ(frames[0].kind, DLMONITOR_FRAME_ROOT);
  EXPECT_EQ(frames[1].kind, DLMONITOR_FRAME_THREAD);
  EXPECT_STREQ(frames[1].name, "main thread");
  EXPECT_STREQ(frames[2].name, "outer_op");
  EXPECT_STREQ(frames[3].name, "inner_op");
  EXPECT_EQ(frames[3].kind, DLMONITOR_FRAME_OPERATOR);

  // Too small a buffer: the root-side frames and the full length.
  EXPECT_EQ(dlmonitor_callpath_get(current, frames, 2, &count),
            DLMONITOR_ERROR_BUFFER_TOO_SMALL);
  EXPECT_EQ(count, 4u);

  // Tools can hang their own frames below a context.
  dlmonitor_frame_t kernel{};
  kernel.struct_size = sizeof(kernel);
  kernel.kind = DLMONITOR_FRAME_GPU_KERNEL;
  kernel.name = "gemm_kernel";
  kernel.file = "";
  dlmonitor_context_t child = 0, again = 0, parent = 0;
  ASSERT_EQ(dlmonitor_context_child(current, &kernel, &child), DLMONITOR_OK);
  ASSERT_EQ(dlmonitor_context_child(current, &kernel, &again), DLMONITOR_OK);
  EXPECT_EQ(child, again);
  dlmonitor_frame_t read{};
  ASSERT_EQ(dlmonitor_context_frame(child, &read, &parent), DLMONITOR_OK);
  EXPECT_EQ(parent, current);
  EXPECT_STREQ(read.name, "gemm_kernel");
  EXPECT_GE(dlmonitor_context_count(), child);
  // Kinds the enum does not name are refused: one of them keys the
  // runtime's unnamed native frames, whose name would be read as an address.
  for (int kind : {-1, DLMONITOR_FRAME_GPU_INSTRUCTION + 1,
                   static_cast<int>(deepcontext::dlmonitor::kUnnamedNativeFrame)}) {
    dlmonitor_frame_t odd = kernel;
    odd.kind = static_cast<dlmonitor_frame_kind_t>(kind);
    dlmonitor_context_t refused = 0;
    EXPECT_EQ(dlmonitor_context_child(current, &odd, &refused),
              DLMONITOR_ERROR_INVALID_ARGUMENT) << kind;
    EXPECT_EQ(refused, 0u);
  }

  ASSERT_EQ(dlmonitor_callback_unregister(handle), DLMONITOR_OK);
  EmitOp("after_unregister", 3, DLMONITOR_PHASE_ENTER);
  EmitOp("after_unregister", 3, DLMONITOR_PHASE_EXIT);
  EXPECT_EQ(seen.enter.size(), 2u);
  EXPECT_EQ(dlmonitor_finalize(), DLMONITOR_OK);
}

TEST(DlmonitorAbi, ArgumentErrors) {
  dlmonitor_callback_handle_t handle = nullptr;
  EXPECT_EQ(dlmonitor_context_current(nullptr), DLMONITOR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(dlmonitor_context_frame(0, nullptr, nullptr), DLMONITOR_ERROR_NOT_FOUND);
  EXPECT_EQ(dlmonitor_callback_unregister(nullptr), DLMONITOR_ERROR_NOT_FOUND);
  // Not initialized (no matching init): registering is refused.
  EXPECT_EQ(dlmonitor_callback_register(DLMONITOR_DOMAIN_FRAMEWORK_OP, &OnOp,
                                        nullptr, &handle),
            DLMONITOR_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(dlmonitor_finalize(), DLMONITOR_ERROR_NOT_INITIALIZED);
  // A compile pattern needs a file; the function may be left out.
  EXPECT_EQ(dlmonitor_python_mark_compile_frames(nullptr, "f"),
            DLMONITOR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(dlmonitor_python_mark_compile_frames("", nullptr),
            DLMONITOR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(dlmonitor_python_mark_compile_frames("/jit/compiler.py", nullptr),
            DLMONITOR_OK);
  EXPECT_EQ(dlmonitor_python_hide_leaf_frames(nullptr, "launcher"),
            DLMONITOR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(dlmonitor_python_hide_leaf_frames("<string>", "launcher"),
            DLMONITOR_OK);
  EXPECT_NE(std::string(dlmonitor_describe()).find("no python frames"),
            std::string::npos);
}

}  // namespace

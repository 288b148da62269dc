// Profile writes: which contexts become nodes, and native frames named at
// the write.
#include "runtime/profiler/profile_builder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "deepcontext/dlmonitor.h"
#include "format/dctx_file.h"
#include "runtime/dlmonitor/monitor.h"

namespace deepcontext::profiler {
namespace {

using dlmonitor::ContextId;
using dlmonitor::FrameKey;
using dlmonitor::Monitor;
using dlmonitor::UnnamedNativeKey;

// Captures key native frames by return address; the write names them.
// Two addresses inside one function that has no line information (libc's
// getpid) get one name, so their contexts, and the ops under them, must
// be written as one node each, with their values merged; an address in
// another function stays a node of its own.
TEST(ProfileBuilder, NativeFramesNamedAlikeAreWrittenAsOneNode) {
  ASSERT_EQ(dlmonitor_init(), DLMONITOR_OK);
  Monitor& monitor = Monitor::Instance();
  monitor.EnableNative(true);
  auto& tree = monitor.tree();
  auto& strings = monitor.strings();
  const ContextId thread = tree.Child(
      dlmonitor::kRootContext,
      FrameKey{DLMONITOR_FRAME_THREAD, strings.Intern("profile builder test"), 0, 0});
  // Return addresses: the symbolizer looks up the byte before each.
  const auto getpid_start = reinterpret_cast<uintptr_t>(&getpid);
  const auto getppid_start = reinterpret_cast<uintptr_t>(&getppid);
  // Created path by path, as a program meets them: a subtree's contexts
  // come before the next path's (so the merge cannot rely on every native
  // frame being seen before the nodes under it).
  const FrameKey op{DLMONITOR_FRAME_OPERATOR, strings.Intern("aten::mm"), 0, 0};
  const FrameKey kernel{DLMONITOR_FRAME_GPU_KERNEL, strings.Intern("gemm"), 0, 0};
  const ContextId first = tree.Child(thread, UnnamedNativeKey(getpid_start + 2));
  const ContextId op_first = tree.Child(first, op);
  const ContextId kernel_first = tree.Child(op_first, kernel);
  const ContextId second = tree.Child(thread, UnnamedNativeKey(getpid_start + 3));
  const ContextId op_second = tree.Child(second, op);
  const ContextId kernel_second = tree.Child(op_second, kernel);
  const ContextId other = tree.Child(thread, UnnamedNativeKey(getppid_start + 2));
  const ContextId op_other = tree.Child(other, op);
  ASSERT_NE(first, second);
  ASSERT_NE(kernel_first, kernel_second);

  MetricStore store;
  const MetricId time = store.Register("cpu_time", "ns", "test");
  store.Add(op_first, time, 10);
  store.Add(op_first, time, 30);
  store.Add(op_second, time, 5);
  store.Add(op_other, time, 7);
  store.Add(second, time, 2);
  store.Add(kernel_first, time, 100);
  store.Add(kernel_second, time, 200);

  const std::string path =
      ::testing::TempDir() + "/profile_builder_" + std::to_string(getpid()) + ".dctx";
  const Status written = WriteProfile(store, {}, path);
  monitor.EnableNative(false);
  ASSERT_TRUE(written.ok()) << written.message();
  const auto read = format::ReadProfileFile(path);
  unlink(path.c_str());
  ASSERT_TRUE(read.ok()) << read.status().message();
  const format::Profile& profile = *read;

  // root, thread, getpid, aten::mm, gemm, getppid, aten::mm
  ASSERT_EQ(profile.nodes.size(), 7u);
  int getpid_node = -1;
  int getppid_node = -1;
  for (size_t i = 0; i < profile.nodes.size(); ++i) {
    const format::Node& node = profile.nodes[i];
    if (node.kind != format::FrameKind::kNativeFrame) continue;
    EXPECT_EQ(node.parent, 1u);
    const std::string& name = profile.strings[node.name];
    if (name.find("getppid") != std::string::npos) {
      getppid_node = static_cast<int>(i);
    } else if (name.find("getpid") != std::string::npos) {
      getpid_node = static_cast<int>(i);
    }
  }
  ASSERT_GE(getpid_node, 0);
  ASSERT_GE(getppid_node, 0);
  double own = -1;
  format::MetricValue merged_op;
  format::MetricValue other_op;
  format::MetricValue merged_kernel;
  for (const format::MetricValue& value : profile.values) {
    if (static_cast<int>(value.node) == getpid_node) own = value.sum;
    const format::Node& node = profile.nodes[value.node];
    if (node.kind == format::FrameKind::kGpuKernel) merged_kernel = value;
    if (node.kind != format::FrameKind::kOperator) continue;
    if (static_cast<int>(node.parent) == getpid_node) merged_op = value;
    if (static_cast<int>(node.parent) == getppid_node) other_op = value;
  }
  EXPECT_EQ(own, 2);
  EXPECT_EQ(merged_op.count, 3u);
  EXPECT_EQ(merged_op.sum, 45);
  EXPECT_EQ(merged_op.min, 5);
  EXPECT_EQ(merged_op.max, 30);
  EXPECT_EQ(other_op.count, 1u);
  EXPECT_EQ(other_op.sum, 7);
  EXPECT_EQ(merged_kernel.count, 2u);
  EXPECT_EQ(merged_kernel.sum, 300);
  EXPECT_EQ(profile.nodes[profile.nodes[merged_kernel.node].parent].parent,
            static_cast<format::NodeId>(getpid_node));
}

}  // namespace
}  // namespace deepcontext::profiler

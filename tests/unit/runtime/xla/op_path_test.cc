#include "runtime/xla/op_path.h"

#include <gtest/gtest.h>

namespace deepcontext::xla {
namespace {

using gpu::GpuNodeKind;

std::vector<std::string> Names(const std::vector<PathNode>& path) {
  std::vector<std::string> names;
  for (const PathNode& node : path) names.push_back(node.name);
  return names;
}

TEST(OpPath, BackwardComponentGivesTheBackwardPhase) {
  const auto path = OpPath("jit(train_step)/transpose(jvp(layer2))/dot_general",
                           "gemm_fusion_dot.6");
  EXPECT_EQ(Names(path), (std::vector<std::string>{"[backward]", "layer2", "dot_general",
                                                   "gemm_fusion_dot.6"}));
  EXPECT_EQ(path[0].kind, GpuNodeKind::kPhase);
  EXPECT_EQ(path[1].kind, GpuNodeKind::kUserScope);
  EXPECT_EQ(path[2].kind, GpuNodeKind::kOperator);
  EXPECT_EQ(path[3].kind, GpuNodeKind::kOperator);
}

TEST(OpPath, DifferentiatedComponentGivesTheForwardPhase) {
  EXPECT_EQ(Names(OpPath("jit(step)/jvp(loss)/layer0/dot_general", "gemm_fusion_dot.3")),
            (std::vector<std::string>{"[forward]", "loss", "layer0", "dot_general",
                                      "gemm_fusion_dot.3"}));
}

TEST(OpPath, EmptyWrappersAreDropped) {
  EXPECT_EQ(Names(OpPath("jit(train_step)/jvp()/div", "loop_multiply_fusion.2")),
            (std::vector<std::string>{"[forward]", "div", "loop_multiply_fusion.2"}));
}

TEST(OpPath, NoAutodiffGivesNoPhase) {
  EXPECT_EQ(Names(OpPath("jit(f)/layer1/tanh", "wrapped_tanh")),
            (std::vector<std::string>{"layer1", "tanh", "wrapped_tanh"}));
  EXPECT_EQ(Names(OpPath("jit(train_step)", "loop_subtract_fusion")),
            (std::vector<std::string>{"loop_subtract_fusion"}));
  EXPECT_EQ(Names(OpPath("", "input_reduce_fusion")),
            (std::vector<std::string>{"input_reduce_fusion"}));
}

TEST(OpPath, NestedJitKeepsTheInnerFunction) {
  EXPECT_EQ(Names(OpPath("jit(step)/jit(inner)/add", "loop_add_fusion")),
            (std::vector<std::string>{"jit(inner)", "add", "loop_add_fusion"}));
}

TEST(SplitNameStack, SlashesInsideParenthesesDoNotSplit) {
  EXPECT_EQ(SplitNameStack("jit(f)/transpose(jvp(a/b))/mul"),
            (std::vector<std::string_view>{"jit(f)", "transpose(jvp(a/b))", "mul"}));
}

}  // namespace
}  // namespace deepcontext::xla

#include "tools/report/folded_tree.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/tools/analysis/test_profiles.h"

namespace deepcontext::report {
namespace {

using analysis::ProfileTree;
using analysis::testing::ProfileBuilder;
using format::FrameKind;

const std::string kModule = "/site-packages/torch/nn/modules/module.py";

// step -> _call_impl -> Linear.forward -> aten::linear (4)
//      -> _call_impl (1 own) -> _call_impl -> Linear.forward -> aten::linear
//      (2)
//      -> Linear.forward -> aten::relu (3)
ProfileTree MakeTree() {
  ProfileBuilder b;
  b.Metric("wall_time");
  auto step = b.Add(0, FrameKind::kPythonFrame, "step", "/p/train.py", 3);
  auto call1 =
      b.Add(step, FrameKind::kPythonFrame, "Module._call_impl", kModule, 1);
  auto fwd1 =
      b.Add(call1, FrameKind::kPythonFrame, "Linear.forward", "/p/l.py", 9);
  b.Value(b.Add(fwd1, FrameKind::kOperator, "aten::linear"), "wall_time", 4);
  auto call2 =
      b.Add(step, FrameKind::kPythonFrame, "Module._call_impl", kModule, 2);
  b.Value(call2, "wall_time", 1);
  auto call3 =
      b.Add(call2, FrameKind::kPythonFrame, "Module._call_impl", kModule, 1);
  auto fwd2 =
      b.Add(call3, FrameKind::kPythonFrame, "Linear.forward", "/p/l.py", 9);
  b.Value(b.Add(fwd2, FrameKind::kOperator, "aten::linear"), "wall_time", 2);
  auto fwd3 =
      b.Add(step, FrameKind::kPythonFrame, "Linear.forward", "/p/l.py", 9);
  b.Value(b.Add(fwd3, FrameKind::kOperator, "aten::relu"), "wall_time", 3);
  return ProfileTree::FromProfile(b.profile());
}

TEST(FoldedTreeTest, WrappersAreSplicedAndSameFramesMerged) {
  ProfileTree tree = MakeTree();
  FoldedTree view(tree, 0, std::nullopt, Folding::kDefault);
  ASSERT_EQ(view.Children(FoldedTree::kRootNode).size(), 1u);
  FoldedTree::ViewNode step = view.Children(FoldedTree::kRootNode)[0];
  EXPECT_EQ(view.frame(step).name, "step");
  // The wrappers' own time goes to their caller; inclusive is unchanged.
  EXPECT_EQ(view.Exclusive(step), 1);
  EXPECT_EQ(view.Inclusive(step), 10);
  // Three Linear.forward nodes, behind zero, one and two wrappers: one row.
  ASSERT_EQ(view.Children(step).size(), 1u);
  FoldedTree::ViewNode forward = view.Children(step)[0];
  EXPECT_EQ(view.frame(forward).name, "Linear.forward");
  EXPECT_EQ(view.Inclusive(forward), 9);
  // Its operators merge too: aten::linear 4 + 2, aten::relu 3.
  ASSERT_EQ(view.Children(forward).size(), 2u);
  double linear = 0;
  for (FoldedTree::ViewNode op : view.Children(forward)) {
    if (view.frame(op).name == "aten::linear") linear = view.Inclusive(op);
  }
  EXPECT_EQ(linear, 6);
}

TEST(FoldedTreeTest, NoFoldingShowsTheTreeAsItIs) {
  ProfileTree tree = MakeTree();
  FoldedTree view(tree, 0, std::nullopt, Folding::kNone);
  FoldedTree::ViewNode step = view.Children(FoldedTree::kRootNode)[0];
  EXPECT_EQ(view.Exclusive(step), 0);
  EXPECT_EQ(view.Children(step).size(), 3u);
}

// What a torch.compile'd module's call looks like in the runtime's tree:
// the user's line, the compiled region, a dozen frames of Dynamo,
// AOTAutograd and Inductor, the line of the generated code, the kernel.
TEST(FoldedTreeTest, TorchCompileMachineryFoldsToTheGeneratedLine) {
  const std::string torch = "/venv/lib/python3.12/site-packages/torch/";
  ProfileBuilder b;
  b.Metric("gpu_time");
  auto line = b.Add(0, FrameKind::kPythonFrame, "main", "/p/train.py", 30);
  auto region = b.Add(line, FrameKind::kOperator, "Torch-Compiled Region: 0/0");
  auto forward = b.Add(region, FrameKind::kPythonFrame, "Block.forward", "/p/train.py", 18);
  auto fn = b.Add(forward, FrameKind::kPythonFrame, "_fn", torch + "_dynamo/eval_frame.py", 1044);
  auto wrapper = b.Add(fn, FrameKind::kPythonFrame, "runtime_wrapper",
                       torch + "_functorch/_aot_autograd/runtime_wrappers.py", 350);
  auto apply = b.Add(wrapper, FrameKind::kPythonFrame, "Function.apply",
                     torch + "autograd/function.py", 576);
  auto phase = b.Add(apply, FrameKind::kPhase, "[forward]");
  auto compiled = b.Add(phase, FrameKind::kOperator, "CompiledFunction");
  auto inner = b.Add(compiled, FrameKind::kPythonFrame, "CompiledFunction.forward",
                     torch + "_functorch/_aot_autograd/runtime_wrappers.py", 2100);
  auto graph = b.Add(inner, FrameKind::kPythonFrame, "CompiledFxGraph.__call__",
                     torch + "_inductor/output_code.py", 584);
  auto call = b.Add(graph, FrameKind::kPythonFrame, "call",
                    "/tmp/torchinductor_u/ab/cab.py", 88);
  auto api = b.Add(call, FrameKind::kGpuApi, "cuLaunchKernelEx");
  b.Value(b.Add(api, FrameKind::kGpuKernel, "triton_poi_fused_gelu_0"), "gpu_time", 5);
  ProfileTree tree = ProfileTree::FromProfile(b.profile());

  FoldedTree view(tree, 0, std::nullopt, Folding::kDefault);
  std::vector<std::string> path;
  FoldedTree::ViewNode node = FoldedTree::kRootNode;
  while (!view.Children(node).empty()) {
    ASSERT_EQ(view.Children(node).size(), 1u);
    node = view.Children(node)[0];
    path.push_back(view.frame(node).name);
  }
  EXPECT_EQ(path, (std::vector<std::string>{
                      "main", "Torch-Compiled Region: 0/0", "Block.forward",
                      "[forward]", "CompiledFunction", "call", "cuLaunchKernelEx",
                      "triton_poi_fused_gelu_0"}));
  EXPECT_EQ(view.Inclusive(view.Children(FoldedTree::kRootNode)[0]), 5);
}

}  // namespace
}  // namespace deepcontext::report

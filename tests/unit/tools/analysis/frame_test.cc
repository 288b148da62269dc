#include "tools/analysis/frame.h"

#include <gtest/gtest.h>

namespace deepcontext::analysis {
namespace {

using format::FrameKind;

Frame Make(FrameKind kind, std::string name, std::string file = "") {
  return Frame{kind, std::move(name), std::move(file), 0};
}

TEST(FrameTest, KernelNamesAreDemangledWithoutReturnTypeAndParameters) {
  EXPECT_EQ(
      DisplayName(Make(
          FrameKind::kGpuKernel,
          "_ZN5cudnn21bn_bw_1C11_kernel_newIffLi512ELb1ELi1EEEvT0_S1_PKT_")),
      "cudnn::bn_bw_1C11_kernel_new<float, float, 512, true, 1>");
  // A kernel that is no C++ symbol (extern "C", Triton) is shown as it is.
  EXPECT_EQ(DisplayName(Make(FrameKind::kGpuKernel, "triton_poi_fused_add_0")),
            "triton_poi_fused_add_0");
  // Some toolchains add an underscore.
  EXPECT_EQ(DisplayName(Make(FrameKind::kGpuKernel, "__Z6kernelPf")), "kernel");
}

TEST(FrameTest, NativeFramesKeepTheirParameters) {
  EXPECT_EQ(DisplayName(Make(FrameKind::kNativeFrame,
                             "_ZN2at14RecordFunction17runStartCallbacksEv")),
            "at::RecordFunction::runStartCallbacks()");
  EXPECT_EQ(DemangledName("_Znot_a_symbol"), "_Znot_a_symbol");
  // Operators and Python frames are never touched.
  EXPECT_EQ(DisplayName(Make(FrameKind::kOperator, "_Z_like_op")),
            "_Z_like_op");
}

TEST(FrameTest, TorchModuleWrappersAreRecognizedByNameAndFile) {
  const std::string module =
      "/usr/lib/python3/dist-packages/torch/nn/modules/module.py";
  EXPECT_TRUE(IsFrameworkWrapper(
      Make(FrameKind::kPythonFrame, "Module._call_impl", module)));
  EXPECT_TRUE(IsFrameworkWrapper(
      Make(FrameKind::kPythonFrame, "Module._wrapped_call_impl", module)));
  EXPECT_TRUE(
      IsFrameworkWrapper(Make(FrameKind::kPythonFrame, "_call_impl", module)));
  EXPECT_FALSE(IsFrameworkWrapper(
      Make(FrameKind::kPythonFrame, "Module.__call__", module)));
  // A user's own _call_impl stays.
  EXPECT_FALSE(IsFrameworkWrapper(
      Make(FrameKind::kPythonFrame, "Model._call_impl", "/home/u/model.py")));
}

TEST(FrameTest, TorchCompileMachineryIsGlueButGeneratedCodeIsNot) {
  const std::string torch = "/opt/venv/lib/python3.12/site-packages/torch/";
  EXPECT_TRUE(IsCompilerGlue(Make(FrameKind::kPythonFrame, "_fn",
                                  torch + "_dynamo/eval_frame.py")));
  EXPECT_TRUE(IsCompilerGlue(
      Make(FrameKind::kPythonFrame, "runtime_wrapper",
           torch + "_functorch/_aot_autograd/runtime_wrappers.py")));
  EXPECT_TRUE(IsCompilerGlue(Make(FrameKind::kPythonFrame,
                                  "CompiledFxGraph.__call__",
                                  torch + "_inductor/output_code.py")));
  EXPECT_TRUE(IsCompilerGlue(Make(FrameKind::kPythonFrame, "Function.apply",
                                  torch + "autograd/function.py")));
  EXPECT_TRUE(IsCompilerGlue(
      Make(FrameKind::kPythonFrame, "JITFunction.run",
           "/usr/lib/python3/dist-packages/triton/runtime/jit.py")));
  // What tracing runs through, and the backend's entry point.
  EXPECT_TRUE(IsCompilerGlue(Make(FrameKind::kPythonFrame,
                                  "FakeTensorMode.dispatch",
                                  torch + "_subclasses/fake_tensor.py")));
  EXPECT_TRUE(IsCompilerGlue(Make(FrameKind::kPythonFrame,
                                  "_TorchCompileInductorWrapper.__call__",
                                  torch + "__init__.py")));
  EXPECT_FALSE(IsCompilerGlue(Make(FrameKind::kPythonFrame, "compile",
                                   torch + "__init__.py")));
  // Inductor's generated module is where the kernel was launched.
  EXPECT_FALSE(IsCompilerGlue(
      Make(FrameKind::kPythonFrame, "call",
           "/tmp/torchinductor_root/ab/cabcdefgh.py")));
  // A user's own checkout of torch, and other torch frames, stay.
  EXPECT_FALSE(IsCompilerGlue(Make(FrameKind::kPythonFrame, "_fn",
                                   "/home/u/torch/_dynamo/eval_frame.py")));
  EXPECT_FALSE(IsCompilerGlue(Make(FrameKind::kPythonFrame, "Linear.forward",
                                   torch + "nn/modules/linear.py")));
  EXPECT_FALSE(IsCompilerGlue(Make(FrameKind::kOperator, "CompiledFunction",
                                   torch + "_dynamo/x.py")));
}

TEST(FrameTest, InductorModulesAreGeneratedNotUserCode) {
  const std::string hash = "c24hlfvkmknwthnnxvlbqi4m7ywlzlvtnyzwwksha5rsmsutsdwy.py";
  EXPECT_TRUE(IsGeneratedCodeFile("/tmp/torchinductor_alice/24/" + hash));
  // A cache folder of the user's choosing (TORCHINDUCTOR_CACHE_DIR).
  EXPECT_TRUE(IsGeneratedCodeFile("/scratch/cache/24/" + hash));
  EXPECT_FALSE(IsUserCodeFile("/scratch/cache/24/" + hash));
  // The folder must be named by the hash's second and third characters.
  EXPECT_FALSE(IsGeneratedCodeFile("/scratch/cache/25/" + hash));
  EXPECT_FALSE(IsGeneratedCodeFile("/home/alice/24/c24short.py"));
  EXPECT_FALSE(IsGeneratedCodeFile("/home/alice/train.py"));
  EXPECT_FALSE(IsGeneratedCodeFile("<string>"));
  EXPECT_TRUE(IsUserCodeFile("/home/alice/train.py"));
  EXPECT_FALSE(IsUserCodeFile("/usr/lib/python3/dist-packages/torch/nn/functional.py"));
}

TEST(FrameTest, ProfilerFramesAreRecognizedMangledOrNot) {
  EXPECT_TRUE(IsProfilerFrame(Make(
      FrameKind::kNativeFrame, "_ZN2at14RecordFunction17runStartCallbacksEv")));
  EXPECT_TRUE(IsProfilerFrame(
      Make(FrameKind::kNativeFrame,
           "c10::Dispatcher::runRecordFunction(at::RecordFunction&, "
           "c10::OperatorHandle const&)")));
  EXPECT_FALSE(
      IsProfilerFrame(Make(FrameKind::kNativeFrame, "at::native::add")));
  EXPECT_FALSE(IsProfilerFrame(
      Make(FrameKind::kOperator, "at::RecordFunction::runStartCallbacks")));
}

}  // namespace
}  // namespace deepcontext::analysis

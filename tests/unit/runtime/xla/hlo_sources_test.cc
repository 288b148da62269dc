#include "runtime/xla/hlo_sources.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace deepcontext::xla {
namespace {

std::string Fixture(const char* name = "hlo_train_step.txt") {
  std::ifstream in(std::string(XLA_FIXTURE_DIR) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> Lines(const std::vector<SourceFrame>& frames) {
  std::vector<std::string> out;
  for (const SourceFrame& f : frames) out.push_back(f.function + ":" + std::to_string(f.line));
  return out;
}

// The probe's train_step (tests/gpu/jax_probe/probe_programs.py at the time
// of the recording): line 41 value_and_grad(mlp_loss), mlp_loss line 36
// calls mlp_forward, whose line 31 is `x = jnp.tanh(x @ w)`.
TEST(ParseHloSources, ForwardOperationsGoFromTheJittedFunctionToTheirLine) {
  const HloSources sources = ParseHloSources(Fixture());
  EXPECT_EQ(sources.module, "jit_train_step");
  auto it = sources.frames.find("gemm_fusion_dot.3");  // jvp(layer0)/dot_general
  ASSERT_NE(it, sources.frames.end());
  EXPECT_EQ(Lines(it->second),
            (std::vector<std::string>{"train_step:41", "mlp_loss:36", "mlp_forward:31"}));
  EXPECT_NE(it->second[0].file.find("probe_programs.py"), std::string::npos);
}

TEST(ParseHloSources, BackwardOperationsKeepTheForwardLineTheyTranspose) {
  const HloSources sources = ParseHloSources(Fixture());
  auto it = sources.frames.find("gemm_fusion_dot.6");  // transpose(jvp(layer2))/dot_general
  ASSERT_NE(it, sources.frames.end());
  ASSERT_FALSE(it->second.empty());
  EXPECT_EQ(it->second.front().function, "train_step");
  EXPECT_EQ(it->second.back().function, "mlp_forward");
  EXPECT_EQ(it->second.back().line, 31u);
}

TEST(ParseHloSources, OperationsOutsideTheJittedFunctionAreLeftOut) {
  const HloSources sources =
      ParseHloSources("HloModule jit_f, is_scheduled=true\n\n"
                      "FileNames\n1 \"a.py\"\n\nFunctionNames\n1 \"main\"\n2 \"g\"\n\n"
                      "FileLocations\n1 {file_name_id=1 function_name_id=1 line=3}\n"
                      "2 {file_name_id=1 function_name_id=2 line=9}\n\n"
                      "StackFrames\n1 {file_location_id=1 parent_frame_id=1}\n"
                      "2 {file_location_id=2 parent_frame_id=2}\n\n"
                      "ENTRY %main {\n"
                      "  %add.1 = f32[] add(%a, %b), metadata={op_name=\"jit(f)/add\" "
                      "stack_frame_id=2}\n}\n");
  EXPECT_EQ(sources.module, "jit_f");
  EXPECT_TRUE(sources.frames.empty());  // g <- main: no frame of f
}

// loss() calls the jitted layer(), which main() had called (and JAX traced)
// before: the inlined operations keep that first traceback, main -> layer.
TEST(ParseHloSources, NestedJitOperationsStartAtTheNestedFunction) {
  const HloSources sources = ParseHloSources(
      "HloModule jit_loss, is_scheduled=true\n\n"
      "FileNames\n1 \"p.py\"\n\nFunctionNames\n1 \"main\"\n2 \"layer\"\n3 \"loss\"\n\n"
      "FileLocations\n1 {file_name_id=1 function_name_id=1 line=30}\n"
      "2 {file_name_id=1 function_name_id=2 line=19}\n"
      "3 {file_name_id=1 function_name_id=1 line=33}\n"
      "4 {file_name_id=1 function_name_id=3 line=24}\n\n"
      "StackFrames\n1 {file_location_id=1 parent_frame_id=1}\n"
      "2 {file_location_id=2 parent_frame_id=2}\n"
      "3 {file_location_id=3 parent_frame_id=1}\n"
      "4 {file_location_id=4 parent_frame_id=4}\n\n"
      "ENTRY %main {\n"
      "  %gemm_fusion_dot.1 = f32[] fusion(%a), metadata={op_name=\"jit(loss)/jit(layer)/dot_general\" "
      "stack_frame_id=2}\n"
      "  %reduce.2 = f32[] reduce(%b), metadata={op_name=\"jit(loss)/reduce_sum\" stack_frame_id=4}\n"
      "  %other.3 = f32[] add(%b), metadata={op_name=\"jit(loss)/add\" stack_frame_id=2}\n}\n");
  auto it = sources.frames.find("gemm_fusion_dot.1");
  ASSERT_NE(it, sources.frames.end());
  EXPECT_EQ(Lines(it->second), (std::vector<std::string>{"layer:19"}));
  it = sources.frames.find("reduce.2");  // loss's own line
  ASSERT_NE(it, sources.frames.end());
  EXPECT_EQ(Lines(it->second), (std::vector<std::string>{"loss:24"}));
  // The same traceback without a nested jit in the name stack: not loss's.
  EXPECT_EQ(sources.frames.count("other.3"), 0u);
}

// Recorded on the H200 (probe_programs.py nested): loss() and layer() are
// defined inside nested(), so JAX names their frames
// "nested.<locals>.loss"; loss calls the jitted layer twice (lines 134 and
// 130 of the probe at the time of the recording).
TEST(ParseHloSources, NestedJitOperationsOfQualifiedFunctionsGetTheirLines) {
  const HloSources sources = ParseHloSources(Fixture("hlo_nested_jit.txt"));
  EXPECT_EQ(sources.module, "jit_loss");
  auto it = sources.frames.find("gemm_fusion_dot");  // jit(loss)/jit(layer)/dot_general
  ASSERT_NE(it, sources.frames.end());
  EXPECT_EQ(Lines(it->second), (std::vector<std::string>{"nested.<locals>.loss:134",
                                                          "nested.<locals>.layer:130"}));
  it = sources.frames.find("input_reduce_fusion");  // jit(loss)/reduce_sum
  ASSERT_NE(it, sources.frames.end());
  EXPECT_EQ(Lines(it->second), (std::vector<std::string>{"nested.<locals>.loss:134"}));
  // Every instruction with a traceback has its lines.
  EXPECT_GE(sources.frames.size(), 7u);
}

TEST(ParseHloSources, TextWithoutAFrameIndexGivesNoFrames) {
  const HloSources sources = ParseHloSources(
      "HloModule jit_f\n\nENTRY %main {\n  ROOT %x = f32[] constant(1)\n}\n");
  EXPECT_EQ(sources.module, "jit_f");
  EXPECT_TRUE(sources.frames.empty());
  EXPECT_TRUE(ParseHloSources("").module.empty());
}

TEST(HloSourceRegistry, RecompilationsKeepOnlyFramesTheyAgreeOn) {
  HloSourceRegistry registry;
  HloSources a;
  a.module = "jit_f";
  a.frames["add.1"] = {{"a.py", "f", 3}};
  a.frames["mul.2"] = {{"a.py", "f", 4}};
  HloSources b = a;
  b.frames["mul.2"] = {{"a.py", "f", 5}};
  registry.Add(a);
  registry.Add(b);
  EXPECT_EQ(registry.Frames("jit_f", "add.1").size(), 1u);
  EXPECT_TRUE(registry.Frames("jit_f", "mul.2").empty());
  registry.Add(a);  // a conflict stays a conflict
  EXPECT_TRUE(registry.Frames("jit_f", "mul.2").empty());
  EXPECT_TRUE(registry.Frames("jit_g", "add.1").empty());
  EXPECT_EQ(registry.modules(), 1u);
}

}  // namespace
}  // namespace deepcontext::xla

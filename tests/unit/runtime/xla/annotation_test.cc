#include "runtime/xla/annotation.h"

#include <gtest/gtest.h>

namespace deepcontext::xla {
namespace {

TEST(ParseAnnotation, ModuleRangeGivesNameAndProgramId) {
  const Annotation a = ParseAnnotation("XlaModule:#hlo_module=jit_train_step,program_id=4642#");
  EXPECT_EQ(a.kind, AnnotationKind::kModule);
  EXPECT_EQ(a.module, "jit_train_step");
  EXPECT_EQ(a.program_id, 4642u);
}

TEST(ParseAnnotation, ModuleWithPrefixKeepsTheModule) {
  const Annotation a =
      ParseAnnotation("XlaModule:#prefix=jit(f)/layer,hlo_module=jit_f,program_id=7#");
  EXPECT_EQ(a.kind, AnnotationKind::kModule);
  EXPECT_EQ(a.module, "jit_f");
}

TEST(ParseAnnotation, ThunkGivesNameStackAndInstruction) {
  const Annotation a = ParseAnnotation(
      "Thunk:#name=jit(train_step)/transpose(jvp(layer2))/dot_general,"
      "hlo_op=gemm_fusion_dot.6,unique_hlo_op_id=8589934600#");
  EXPECT_EQ(a.kind, AnnotationKind::kThunk);
  EXPECT_EQ(a.op_name, "jit(train_step)/transpose(jvp(layer2))/dot_general");
  EXPECT_EQ(a.hlo_op, "gemm_fusion_dot.6");
}

TEST(ParseAnnotation, ThunkWithoutMetadataHasOnlyTheInstruction) {
  const Annotation a = ParseAnnotation("Thunk:#hlo_op=command_buffer_1#");
  EXPECT_EQ(a.kind, AnnotationKind::kThunk);
  EXPECT_EQ(a.op_name, "");
  EXPECT_EQ(a.hlo_op, "command_buffer_1");
}

TEST(ParseAnnotation, CommasInsideAScopeNameStayInTheValue) {
  const Annotation a =
      ParseAnnotation("Thunk:#name=jit(f)/block(a,b)/add,hlo_op=loop_add_fusion#");
  EXPECT_EQ(a.op_name, "jit(f)/block(a,b)/add");
  EXPECT_EQ(a.hlo_op, "loop_add_fusion");
}

TEST(ParseAnnotation, CompilerRangesAreCompilation) {
  EXPECT_EQ(ParseAnnotation("XlaCompile:#module=jit_f#").kind, AnnotationKind::kCompile);
  EXPECT_EQ(ParseAnnotation("XlaCompileBackend:#module=jit_f,program_id=1#").kind,
            AnnotationKind::kCompile);
  EXPECT_EQ(ParseAnnotation("XlaPass:#name=dce,module=jit_f,program_id=1#").kind,
            AnnotationKind::kCompile);
  // Autotuning runs candidate fusions as modules with no program id.
  EXPECT_EQ(ParseAnnotation("XlaModule:#hlo_module=gemm_fusion_dot.4#").kind,
            AnnotationKind::kCompile);
}

TEST(ParseAnnotation, OtherStringsAreOther) {
  EXPECT_EQ(ParseAnnotation("").kind, AnnotationKind::kOther);
  EXPECT_EQ(ParseAnnotation("my range").kind, AnnotationKind::kOther);
  EXPECT_EQ(ParseAnnotation("Thunk:#name=x#").kind, AnnotationKind::kOther);  // no hlo_op
  EXPECT_EQ(ParseAnnotation("Thunk:#hlo_op=x").kind, AnnotationKind::kOther);  // unterminated
  EXPECT_EQ(ParseAnnotation("Step:#step_num=3#").kind, AnnotationKind::kOther);
}

}  // namespace
}  // namespace deepcontext::xla

// XLA's runtime annotations: the strings XLA GPU gives its NVTX ranges
// (domain "TSL") when an NVTX tool is attached, e.g.
//   XlaModule:#hlo_module=jit_step,program_id=4642#
//   Thunk:#name=jit(step)/transpose(jvp(layer2))/dot_general,hlo_op=gemm_fusion_dot.6,unique_hlo_op_id=8589934600#
//   XlaCompile:#module=jit_step#
// Measured with JAX 0.11.2 (tests/unit/runtime/xla/fixtures/README.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace deepcontext::xla {

enum class AnnotationKind {
  kOther,     // not an XLA range, or one that changes no attribution
  kModule,    // an executable's run ("XlaModule" with a program_id)
  kThunk,     // one HLO instruction's work ("Thunk")
  kCompile,   // compilation or autotuning of a module
};

struct Annotation {
  AnnotationKind kind = AnnotationKind::kOther;
  std::string module;   // hlo_module= or module=
  uint64_t program_id = 0;
  std::string op_name;  // name=: JAX's name stack, e.g. jit(f)/jvp(g)/dot_general
  std::string hlo_op;   // hlo_op=: the HLO instruction, e.g. gemm_fusion_dot.6
};

// Parses one range message; anything unknown is kOther. Autotuning runs
// candidate fusions as modules without a program_id: those are kCompile.
Annotation ParseAnnotation(std::string_view message);

}  // namespace deepcontext::xla

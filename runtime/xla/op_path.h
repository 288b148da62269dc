// The context-tree nodes between a jitted call's Python line and an XLA
// kernel, from the HLO instruction's JAX name stack (op_name) and name:
//   jit(step)/transpose(jvp(layer2))/dot_general, gemm_fusion_dot.6
//   -> [backward] -> layer2 -> dot_general -> gemm_fusion_dot.6
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/gpu/context_sink.h"

namespace deepcontext::xla {

struct PathNode {
  gpu::GpuNodeKind kind;
  std::string name;
  std::string file;  // source lines only
  uint32_t line = 0;
};

// Phase: "[backward]" when a component is transposed (reverse mode),
// "[forward]" when it is only differentiated (jvp), none otherwise. The
// leading jit(...) names the module the Python line called and is left out;
// scope components become user-scope nodes, the last component (the JAX
// primitive) and the HLO instruction operator nodes. Empty op_name: the
// instruction alone.
std::vector<PathNode> OpPath(std::string_view op_name, std::string_view hlo_op);

// The node reached from `base` by creating (or finding) each node of
// `path` below the previous one; 0 when the sink could not create one.
gpu::ContextId WalkPath(gpu::ContextSink& sink, gpu::ContextId base,
                        const std::vector<PathNode>& path);

// Splits a name stack at '/' outside parentheses.
std::vector<std::string_view> SplitNameStack(std::string_view op_name);

}  // namespace deepcontext::xla

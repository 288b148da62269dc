// Rules over framework operators: they need only the operator tree, so they
// check CPU profiles as well as GPU ones.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>

#include "tools/analyzer/rule.h"
#include "tools/analyzer/units.h"

namespace deepcontext::analyzer {

namespace {

using format::FrameKind;

// Pointwise operators that read and write whole tensors once each: a chain
// of them is memory-bound and fuses into one pass.
bool IsElementwise(std::string_view name) {
  static const std::unordered_set<std::string_view> kOps = {
      "aten::add",     "aten::add_",     "aten::sub",     "aten::sub_",
      "aten::mul",     "aten::mul_",     "aten::div",     "aten::div_",
      "aten::neg",     "aten::pow",      "aten::exp",     "aten::log",
      "aten::sqrt",    "aten::rsqrt",    "aten::tanh",    "aten::tanh_",
      "aten::sigmoid", "aten::sigmoid_", "aten::relu",    "aten::relu_",
      "aten::abs",     "aten::sin",      "aten::cos",     "aten::erf",
      "aten::clamp",   "aten::clamp_",   "aten::where",   "aten::reciprocal",
      "aten::square",  "aten::maximum",  "aten::minimum", "aten::exp_",
      "aten::addcmul", "aten::addcdiv",  "aten::lerp"};
  return kOps.contains(name);
}

// Time of an operator subtree: its kernels' GPU time on GPU profiles, its
// host time otherwise.
double OpTime(const ProfileView& view, NodeIndex node) {
  if (view.HasGpu()) return view.Inclusive(node, view.metrics().gpu_time);
  return view.HostTime(node);
}

// True below torch's Optimizer.zero_grad or Module.zero_grad (Python frame
// names are qualified: "Optimizer.zero_grad").
bool UnderZeroGrad(const analysis::ProfileTree& tree, NodeIndex node) {
  for (NodeIndex at = node; at != analysis::ProfileTree::kRootNode;
       at = tree.node(at).parent) {
    const analysis::Frame& frame = tree.frame_of(at);
    if (frame.kind == FrameKind::kPythonFrame &&
        (frame.name == "zero_grad" || frame.name.ends_with(".zero_grad")) &&
        (frame.file.find("torch/optim/") != std::string::npos ||
         frame.file.find("torch/nn/modules/") != std::string::npos)) {
      return true;
    }
  }
  return false;
}

// torch.optim's Optimizer.step wraps every step in a record_function scope
// "Optimizer.step#<Class>.step" (torch 1.8 to 2.x). Its wall time covers the
// Python for-loop between the operators too, which the operators' own time
// misses: on torch 2.x the operators are cheap and the interpreter's
// per-parameter work is most of the loop. kNoNode when absent.
NodeIndex EnclosingOptimizerStep(const analysis::ProfileTree& tree,
                                 NodeIndex node) {
  for (NodeIndex at = node; at != analysis::ProfileTree::kRootNode;
       at = tree.node(at).parent) {
    const analysis::Frame& frame = tree.frame_of(at);
    if ((frame.kind == FrameKind::kUserScope ||
         frame.kind == FrameKind::kOperator) &&
        frame.name.starts_with("Optimizer.step#")) {
      return at;
    }
  }
  return kNoNode;
}

}  // namespace

RuleOutcome CheckUnfusedElementwise(const ProfileView& view,
                                    const Thresholds& t) {
  RuleOutcome outcome;
  if (!view.metrics().calls) {
    outcome.skipped = "no 'calls' metric (operators were not profiled)";
    return outcome;
  }
  const analysis::ProfileTree& tree = view.tree();
  struct Chain {
    double calls = 0, min_calls = 0, time = 0;
    double costliest_call = 0;  // the largest time per call of one operator
    std::set<std::string> names;
    NodeIndex heaviest = kNoNode;
    double heaviest_time = -1;
  };
  // Keyed by the Python frame node the operators were called from: one
  // tree node is one source line in one calling context.
  std::map<NodeIndex, Chain> chains;
  for (NodeIndex n = 1; n < tree.size(); ++n) {
    const analysis::Frame& frame = tree.frame_of(n);
    if (frame.kind != FrameKind::kOperator || !IsElementwise(frame.name)) {
      continue;
    }
    // Operators the user's line called directly ([forward] / [backward]
    // phase nodes may sit between): library code is not the user's to fuse.
    NodeIndex parent = tree.node(n).parent;
    while (parent != analysis::ProfileTree::kRootNode &&
           tree.frame_of(parent).kind == FrameKind::kPhase) {
      parent = tree.node(parent).parent;
    }
    const analysis::Frame& caller = tree.frame_of(parent);
    if (caller.kind != FrameKind::kPythonFrame ||
        !analysis::IsUserCodeFile(caller.file)) {
      continue;
    }
    double calls = view.Exclusive(n, view.metrics().calls);
    if (calls <= 0) continue;
    Chain& chain = chains[parent];
    chain.calls += calls;
    chain.min_calls =
        chain.min_calls == 0 ? calls : std::min(chain.min_calls, calls);
    chain.names.insert(frame.name);
    double time = OpTime(view, n);
    chain.time += time;
    chain.costliest_call = std::max(chain.costliest_call, time / calls);
    if (time > chain.heaviest_time) {
      chain.heaviest_time = time;
      chain.heaviest = n;
    }
  }
  for (const auto& [line_node, chain] : chains) {
    // The least-called operator of the line runs once per execution of the
    // line (at least), so this is the chain length per execution.
    double per_execution = chain.calls / chain.min_calls;
    if (per_execution < t.elementwise_chain_min) continue;
    // Fused, k passes over memory become one and k launches one; the fused
    // operator still costs at least one call of the chain's costliest
    // operator per execution (a CPU tanh, or one memory pass on the GPU).
    // Per call, not per operator: `0.5 * v * ...` calls aten::mul six times
    // per execution, and on the H200 twin the fused GELU cost one pass.
    double executions = chain.min_calls;
    double fused =
        std::max(chain.costliest_call * executions, chain.time / per_execution);
    double high = chain.time - fused;
    if (!WorthReporting(view, t, high)) continue;
    Finding f = MakeFinding(
        view, "unfused_elementwise", line_node,
        "unfused chain of " + FormatCount(per_execution) +
            " elementwise operators per execution of this line",
        high * 0.5, high,
        "chain time - max(costliest call x executions, chain time / ops "
        "per execution): what one fused pass instead of k would save");
    f.context.op = "";
    f.evidence.push_back({"elementwise_ops_per_execution", per_execution,
                          "count",
                          ">=", static_cast<double>(t.elementwise_chain_min)});
    f.evidence.push_back({"elementwise_time", chain.time, "ns", "", 0});
    std::string names;
    for (const std::string& name : chain.names) {
      names += (names.empty() ? "" : ", ") + name;
    }
    f.suggestion =
        "Fuse the chain (" + names +
        "): use the fused operator when one exists (F.gelu, F.silu, "
        "fused norms, scaled_dot_product_attention) or compile the function "
        "with torch.compile so the elementwise ops become one kernel.";
    f.example =
        "y = torch.nn.functional.gelu(x, approximate=\"tanh\")  # or "
        "@torch.compile";
    outcome.findings.push_back(std::move(f));
  }
  return outcome;
}

RuleOutcome CheckForwardBackwardImbalance(const ProfileView& view,
                                          const Thresholds& t) {
  RuleOutcome outcome;
  const analysis::ProfileTree& tree = view.tree();
  if (!view.host_time_metric() && !view.HasGpu()) {
    outcome.skipped = "no time metric";
    return outcome;
  }
  for (NodeIndex n = 1; n < tree.size(); ++n) {
    if (tree.frame_of(n).kind != FrameKind::kPythonFrame) continue;
    NodeIndex forward = kNoNode, backward = kNoNode;
    for (NodeIndex child : tree.node(n).children) {
      const analysis::Frame& frame = tree.frame_of(child);
      if (frame.kind != FrameKind::kPhase) continue;
      if (frame.name.find("backward") != std::string::npos)
        backward = child;
      else if (frame.name.find("forward") != std::string::npos)
        forward = child;
    }
    if (forward == kNoNode || backward == kNoNode) continue;
    double forward_time = OpTime(view, forward);
    double backward_time = OpTime(view, backward);
    if (forward_time <= 0 || backward_time <= 0) continue;
    double ratio = backward_time / forward_time;
    if (ratio <= t.backward_forward_ratio) continue;
    if (backward_time < t.imbalance_min_share * view.BasisNs()) continue;
    // Blame the costliest operator of the backward pass.
    NodeIndex worst = backward;
    double worst_time = -1;
    for (NodeIndex child : tree.node(backward).children) {
      double time = OpTime(view, child);
      if (time > worst_time) {
        worst_time = time;
        worst = child;
      }
    }
    // A 2:1 backward is normal: what is above it could be saved.
    double high = backward_time * (ratio - 2.0) / ratio;
    if (!WorthReporting(view, t, high)) continue;
    Finding f = MakeFinding(
        view, "fwd_bwd_imbalance", worst,
        "backward costs " + FormatRatio(ratio) + "x its forward", high * 0.5,
        high, "backward time x (ratio - 2) / ratio: a 2:1 backward is normal");
    f.evidence.push_back({"backward_forward_ratio", ratio, "ratio", ">",
                          t.backward_forward_ratio});
    f.evidence.push_back({"backward_time", backward_time, "ns", "", 0});
    f.evidence.push_back({"forward_time", forward_time, "ns", "", 0});
    const std::string& op = tree.frame_of(worst).name;
    if (op.find("Embedding") != std::string::npos) {
      f.suggestion =
          "The embedding's dense backward scatters into the whole weight "
          "(atomics on GPU). Use sparse gradients with an optimizer that "
          "accepts them, or freeze the table if it is not trained.";
      f.example =
          "nn.Embedding(num, dim, sparse=True)  # with torch.optim.SparseAdam";
    } else if (op.find("Index") != std::string::npos ||
               op.find("Scatter") != std::string::npos ||
               op.find("Gather") != std::string::npos) {
      f.suggestion =
          "Index/scatter backward accumulates with atomics. Prefer dense "
          "formulations (one_hot @ W, masks) or sort indices first; avoid "
          "deterministic algorithms in performance runs.";
      f.example = "torch.use_deterministic_algorithms(False)";
    } else {
      f.suggestion =
          "Check " + op +
          ": enable cudnn.benchmark, keep autocast around "
          "the loss and backward, and set requires_grad=False on frozen "
          "parameters so their gradients are not computed.";
      f.example = "torch.backends.cudnn.benchmark = True";
    }
    outcome.findings.push_back(std::move(f));
  }
  return outcome;
}

RuleOutcome CheckSlowOptimizer(const ProfileView& view, const Thresholds& t) {
  RuleOutcome outcome;
  const analysis::ProfileTree& tree = view.tree();
  if (!view.host_time_metric()) {
    outcome.skipped = "no host time metric";
    return outcome;
  }
  struct Loop {
    double time = 0, calls = 0;
    std::string algorithm;
    NodeIndex line = kNoNode;
    std::set<NodeIndex> steps;  // Optimizer.step# scopes already counted
  };
  // Keyed by the user's line calling optimizer.step(): the for-loop shows
  // up once per line of _single_tensor_* that ran operators.
  std::map<analysis::FrameId, Loop> loops;
  for (NodeIndex n = 1; n < tree.size(); ++n) {
    const analysis::Frame& frame = tree.frame_of(n);
    // torch.optim dispatches to _single_tensor_<name> (for-loop),
    // _multi_tensor_<name> (foreach) or _fused_<name>.
    if (frame.kind != FrameKind::kPythonFrame ||
        !frame.name.starts_with("_single_tensor_") ||
        frame.file.find("torch/optim/") == std::string::npos) {
      continue;
    }
    // The same function nested in itself is counted once, at the top.
    if (view.UnderPythonFunction(tree.node(n).parent, "_single_tensor_",
                                 "torch/optim/")) {
      continue;
    }
    // The whole step when torch's step scope encloses the loop (each scope
    // once: the loop's lines are several nodes under it), else the
    // operators' time under the loop.
    NodeIndex step = EnclosingOptimizerStep(tree, n);
    NodeIndex timed = step == kNoNode ? n : step;
    NodeIndex user = view.UserFrame(n);
    if (user == kNoNode) user = n;
    Loop& loop = loops[tree.node(user).frame];
    if (loop.line == kNoNode) loop.line = user;
    if (step == kNoNode || loop.steps.insert(step).second) {
      double time = view.HostTime(timed);
      if (view.HasGpu()) {
        time = std::max(time, view.Inclusive(timed, view.metrics().gpu_time));
      }
      loop.time += time;
    }
    loop.calls += view.Inclusive(n, view.metrics().calls);
    loop.algorithm = frame.name.substr(sizeof("_single_tensor_") - 1);
  }
  for (const auto& [frame, loop] : loops) {
    double low_share =
        view.HasGpu() ? t.optimizer_saving_low_gpu : t.optimizer_saving_low_cpu;
    double high_share = view.HasGpu() ? t.optimizer_saving_high_gpu
                                      : t.optimizer_saving_high_cpu;
    if (!WorthReporting(view, t, loop.time * high_share)) continue;
    const std::string& algorithm = loop.algorithm;
    double time = loop.time;
    double calls = loop.calls;
    Finding f = MakeFinding(
        view, "slow_optimizer", loop.line,
        "optimizer " + algorithm + " runs its per-parameter for-loop",
        time * low_share, time * high_share,
        "optimizer step time (torch's Optimizer.step scope around the "
        "for-loop, else the loop's operators) x measured foreach/fused "
        "saving range");
    f.evidence.push_back({"optimizer_time", time, "ns", "", 0});
    f.evidence.push_back({"operator_calls", calls, "count", "", 0});
    f.suggestion =
        "Use the multi-tensor (foreach) or fused implementation: one kernel "
        "(or a few) for all parameters instead of several per parameter. "
        "Also pass foreach=True to clip_grad_norm_.";
    f.example = "torch.optim." +
                std::string(algorithm == "adam"    ? "Adam"
                            : algorithm == "adamw" ? "AdamW"
                            : algorithm == "sgd"   ? "SGD"
                                                   : algorithm) +
                "(params, lr=..., foreach=True)  # fused=True on CUDA";
    outcome.findings.push_back(std::move(f));
  }
  return outcome;
}

RuleOutcome CheckZeroGradFill(const ProfileView& view, const Thresholds& t) {
  RuleOutcome outcome;
  const analysis::ProfileTree& tree = view.tree();
  if (!view.host_time_metric() && !view.HasGpu()) {
    outcome.skipped = "no time metric";
    return outcome;
  }
  struct Fill {
    double time = 0, calls = 0;
    NodeIndex line = kNoNode;
  };
  // zero_grad(set_to_none=False) writes zeros into every gradient (one fill
  // per parameter); set_to_none=True only drops the references.
  std::map<analysis::FrameId, Fill> fills;
  for (NodeIndex n = 1; n < tree.size(); ++n) {
    const analysis::Frame& frame = tree.frame_of(n);
    if (frame.kind != FrameKind::kOperator ||
        (frame.name != "aten::zero_" && frame.name != "aten::fill_")) {
      continue;
    }
    // Only the outermost fill: zero_ calls fill_ underneath.
    if (tree.frame_of(tree.node(n).parent).kind == FrameKind::kOperator) {
      continue;
    }
    if (!UnderZeroGrad(tree, n)) continue;
    NodeIndex user = view.UserFrame(n);
    if (user == kNoNode) user = n;
    Fill& fill = fills[tree.node(user).frame];
    if (fill.line == kNoNode) fill.line = user;
    fill.time += OpTime(view, n);
    fill.calls += view.Exclusive(n, view.metrics().calls);
  }
  for (const auto& [frame, fill] : fills) {
    if (!WorthReporting(view, t, fill.time)) continue;
    Finding f = MakeFinding(
        view, "zero_grad_fill", fill.line,
        "zero_grad fills " + FormatCount(fill.calls) +
            " gradients with zeros instead of dropping them",
        fill.time, fill.time,
        "the fills' time: set_to_none=True does no work per parameter");
    f.evidence.push_back({"fill_time", fill.time, "ns", "", 0});
    f.evidence.push_back({"fill_calls", fill.calls, "count", "", 0});
    f.suggestion =
        "Set gradients to None instead of zeroing them: no fill per "
        "parameter, and gradient memory is freed until backward, which "
        "lowers the memory peak (the default from torch 2.0).";
    f.example = "optimizer.zero_grad(set_to_none=True)";
    outcome.findings.push_back(std::move(f));
  }
  return outcome;
}

}  // namespace deepcontext::analyzer

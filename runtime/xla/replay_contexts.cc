#include "runtime/xla/replay_contexts.h"

namespace deepcontext::xla {

void ReplayContexts::Remember(gpu::ContextId refined, gpu::ContextId base,
                              const std::vector<PathNode>* path) {
  if (refined == 0 || base == 0 || refined == base || path == nullptr) return;
  std::lock_guard<std::mutex> lock(origins_mutex_);
  if (origins_.size() >= kMaxRemembered && origins_.count(refined) == 0) return;
  origins_[refined] = Origin{base, path};
}

bool ReplayContexts::Find(gpu::ContextId refined, Origin* origin) const {
  std::lock_guard<std::mutex> lock(origins_mutex_);
  auto it = origins_.find(refined);
  if (it == origins_.end()) return false;
  *origin = it->second;
  return true;
}

size_t ReplayContexts::remembered() const {
  std::lock_guard<std::mutex> lock(origins_mutex_);
  return origins_.size();
}

gpu::ContextId ReplayContexts::Compute(gpu::ContextId node_context,
                                       gpu::ContextId launch_context) {
  Origin node, launch;
  if (!Find(node_context, &node) || !Find(launch_context, &launch)) return node_context;
  // Launched by the call that recorded it: exactly where it was.
  if (node.base == launch.base) return node_context;
  // A launch from one of XLA's threads has no line to give.
  if (is_thread_root_ != nullptr && is_thread_root_(launch.base)) return node_context;
  const gpu::ContextId moved = WalkPath(sink_, launch.base, *node.path);
  return moved != 0 ? moved : node_context;
}

gpu::ContextId ReplayContexts::Place(gpu::ContextId node_context,
                                     gpu::ContextId launch_context) {
  if (node_context == 0 || launch_context == 0 || node_context == launch_context) {
    return node_context;
  }
  Slot& slot = cache_[((node_context * 0x9E3779B97F4A7C15ull) ^ (launch_context << 7) ^
                       (launch_context >> 3)) %
                      cache_.size()];
  gpu::ContextId result = 0;
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (slot.node == node_context && slot.launch == launch_context) result = slot.result;
  }
  if (result == 0) {
    result = Compute(node_context, launch_context);
    std::lock_guard<std::mutex> lock(cache_mutex_);
    slot = Slot{node_context, launch_context, result};
  }
  if (result != node_context) moved_.fetch_add(1, std::memory_order_relaxed);
  return result;
}

}  // namespace deepcontext::xla

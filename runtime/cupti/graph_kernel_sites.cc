#include "runtime/cupti/graph_kernel_sites.h"

#include <algorithm>

namespace deepcontext::cupti {

const CaptureSite* UniqueSite(const GraphKernelTable& table, std::string_view name) {
  auto it = table.find(name);
  if (it == table.end() || it->second.several_sites) return nullptr;
  return &it->second;
}

GraphKernelSites::GraphKernelSites(size_t max_graphs)
    : max_graphs_(std::max<size_t>(max_graphs, 1)) {}

template <typename Map>
void GraphKernelSites::MakeRoom(Map& map, uint64_t key) {
  if (map.size() < max_graphs_ || map.count(key) != 0) return;
  // Graphs are built to be replayed: creating one is rare, so a linear scan
  // for the oldest costs less than keeping an order index.
  map.erase(std::min_element(map.begin(), map.end(), [](const auto& a, const auto& b) {
    return a.second.sequence < b.second.sequence;
  }));
}

void GraphKernelSites::OnKernelCaptured(uint64_t graph, std::string_view kernel,
                                        gpu::ContextId context, std::string_view api) {
  if (graph == 0 || kernel.empty()) return;
  std::lock_guard<std::mutex> guard(mutex_);
  MakeRoom(graphs_, graph);
  auto [entry, new_graph] = graphs_.try_emplace(graph);
  if (new_graph) entry->second.sequence = next_sequence_++;
  GraphKernelTable& table = entry->second.value;
  auto it = table.find(kernel);
  if (it == table.end()) {
    table.emplace(std::string(kernel), CaptureSite{context, std::string(api), false});
    return;
  }
  // The same kernel captured again at the same site (a loop on one line)
  // still lands in one place; only different sites are ambiguous.
  if (it->second.context != context || it->second.api != api) it->second.several_sites = true;
}

void GraphKernelSites::OnGraphCloned(uint64_t clone, uint64_t original) {
  if (clone == 0) return;
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = graphs_.find(original);
  if (it == graphs_.end()) return;
  GraphKernelTable copy = it->second.value;  // the insert below may rehash
  MakeRoom(graphs_, clone);
  graphs_[clone] = Aged<GraphKernelTable>{std::move(copy), next_sequence_++};
}

void GraphKernelSites::OnGraphDestroyed(uint64_t graph) {
  std::lock_guard<std::mutex> guard(mutex_);
  graphs_.erase(graph);
}

void GraphKernelSites::OnExecCreated(uint64_t exec, uint64_t graph) {
  if (exec == 0) return;
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = graphs_.find(graph);
  if (it == graphs_.end() || it->second.value.empty()) {
    execs_.erase(exec);  // a handle reused by the driver
    return;
  }
  auto table = std::make_shared<const GraphKernelTable>(it->second.value);
  MakeRoom(execs_, exec);
  execs_[exec] = Aged<std::shared_ptr<const GraphKernelTable>>{std::move(table),
                                                                next_sequence_++};
}

void GraphKernelSites::OnExecDestroyed(uint64_t exec) {
  std::lock_guard<std::mutex> guard(mutex_);
  execs_.erase(exec);
}

std::shared_ptr<const GraphKernelTable> GraphKernelSites::ForLaunch(uint64_t exec) const {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = execs_.find(exec);
  return it != execs_.end() ? it->second.value : nullptr;
}

size_t GraphKernelSites::graphs() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return graphs_.size();
}

size_t GraphKernelSites::execs() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return execs_.size();
}

}  // namespace deepcontext::cupti

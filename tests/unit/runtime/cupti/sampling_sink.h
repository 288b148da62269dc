// A fake context sink for the GPU sampling tests: the fake tree plus named
// metrics (stall reasons) and the source locations of instruction nodes.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "tests/unit/runtime/gpu/fake_context_sink.h"

namespace deepcontext::cupti::fake {

class SamplingSink : public gpu::FakeContextSink {
 public:
  int RegisterNamedMetric(std::string_view name, std::string_view,
                          std::string_view description) override {
    auto [it, inserted] = ids_.try_emplace(std::string(name), static_cast<int>(ids_.size()));
    if (inserted) descriptions_[it->second] = std::string(description);
    return it->second;
  }
  void AddNamed(gpu::ContextId context, int metric, double value) override {
    sums_[{context, metric}] += value;
    ++adds_[{context, metric}];
  }
  double Named(gpu::ContextId context, const std::string& metric) const {
    auto id = ids_.find(metric);
    if (id == ids_.end()) return 0;
    auto it = sums_.find({context, id->second});
    return it == sums_.end() ? 0 : it->second;
  }
  gpu::ContextId ChildAt(gpu::ContextId parent, gpu::GpuNodeKind kind, std::string_view name,
                         std::string_view file, uint32_t line) override {
    const gpu::ContextId id = Child(parent, kind, name);
    locations_[id] = std::string(file) + ":" + std::to_string(line);
    return id;
  }
  std::string Location(gpu::ContextId id) const {
    auto it = locations_.find(id);
    return it == locations_.end() ? "" : it->second;
  }
  bool Registered(const std::string& metric) const { return ids_.count(metric) != 0; }
  std::string Description(const std::string& metric) const {
    return descriptions_.at(ids_.at(metric));
  }

 private:
  std::map<std::string, int> ids_;
  std::map<int, std::string> descriptions_;
  std::map<std::pair<gpu::ContextId, int>, double> sums_;
  std::map<std::pair<gpu::ContextId, int>, int> adds_;
  std::map<gpu::ContextId, std::string> locations_;
};

}  // namespace deepcontext::cupti::fake

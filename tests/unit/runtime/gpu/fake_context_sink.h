// An in-memory ContextSink for tests: a tree of named nodes with per-node
// metric accumulators, addressable by name paths.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/gpu/context_sink.h"

namespace deepcontext::gpu {

class FakeContextSink : public ContextSink {
 public:
  struct Node {
    ContextId parent = 0;
    GpuNodeKind kind = GpuNodeKind::kApi;
    std::string name;
  };
  struct Sample {
    uint64_t count = 0;
    double sum = 0;
  };

  // Ids below this are "calling contexts" owned by the test (1 = root).
  static constexpr ContextId kFirstId = 1000;

  ContextId Child(ContextId parent, GpuNodeKind kind,
                  std::string_view name) override {
    std::lock_guard<std::mutex> guard(mutex_);
    ++child_calls_;
    auto key = std::make_tuple(parent, static_cast<int>(kind), std::string(name));
    auto it = ids_.find(key);
    if (it != ids_.end()) return it->second;
    const ContextId id = kFirstId + nodes_.size();
    nodes_.push_back(Node{parent, kind, std::string(name)});
    ids_.emplace(key, id);
    return id;
  }

  void Add(ContextId context, GpuMetric metric, double value) override {
    std::lock_guard<std::mutex> guard(mutex_);
    Sample& sample = samples_[{context, metric}];
    ++sample.count;
    sample.sum += value;
  }

  // The node reached from `start` by following child names; 0 if absent.
  ContextId Find(ContextId start, const std::vector<std::string>& names) const {
    std::lock_guard<std::mutex> guard(mutex_);
    ContextId current = start;
    for (const std::string& name : names) {
      ContextId next = 0;
      for (const auto& [key, id] : ids_) {
        if (std::get<0>(key) == current && std::get<2>(key) == name) next = id;
      }
      if (next == 0) return 0;
      current = next;
    }
    return current;
  }

  Sample Get(ContextId context, GpuMetric metric) const {
    std::lock_guard<std::mutex> guard(mutex_);
    auto it = samples_.find({context, metric});
    return it == samples_.end() ? Sample{} : it->second;
  }

  // Sum / count of a metric at the node named by the path below `start`.
  double Sum(ContextId start, const std::vector<std::string>& path,
             GpuMetric metric) const {
    return Get(Find(start, path), metric).sum;
  }
  uint64_t Count(ContextId start, const std::vector<std::string>& path,
                 GpuMetric metric) const {
    return Get(Find(start, path), metric).count;
  }

  // Total over all nodes of a metric.
  Sample Total(GpuMetric metric) const {
    std::lock_guard<std::mutex> guard(mutex_);
    Sample total;
    for (const auto& [key, sample] : samples_) {
      if (key.second == metric) {
        total.count += sample.count;
        total.sum += sample.sum;
      }
    }
    return total;
  }

  Node NodeOf(ContextId id) const {
    std::lock_guard<std::mutex> guard(mutex_);
    return nodes_.at(id - kFirstId);
  }
  size_t node_count() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return nodes_.size();
  }
  uint64_t child_calls() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return child_calls_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Node> nodes_;
  std::map<std::tuple<ContextId, int, std::string>, ContextId> ids_;
  std::map<std::pair<ContextId, GpuMetric>, Sample> samples_;
  uint64_t child_calls_ = 0;
};

}  // namespace deepcontext::gpu

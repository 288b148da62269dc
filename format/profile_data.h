// In-memory form of one .dctx profile: what the runtime's writer produces and
// what the offline reader returns. Both sides share this one definition so the
// file layout (docs/FORMAT.md) has exactly one source of truth.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace deepcontext::format {

// What a calling-context node stands for. Values are stored in files: append
// only, never renumber.
enum class FrameKind : uint8_t {
  kRoot = 0,         // the single root of a profile
  kThread = 1,       // one OS thread of the profiled process
  kPythonFrame = 2,  // a Python function at a line: name=function, file, line
  kOperator = 3,     // a framework operator (aten::linear, AddmmBackward0)
  kPhase = 4,        // [forward] / [backward] grouping node
  kUserScope = 5,    // torch.profiler.record_function / deepcontext scopes
  kNativeFrame = 6,  // a C/C++ function (name, file, line or module+offset)
  kGpuApi = 7,       // a GPU runtime/driver API call (cuLaunchKernel)
  kGpuKernel = 8,    // a GPU kernel
  kGpuMemcpy = 9,
  kGpuMemset = 10,
  kGpuSync = 11,
  kProcess = 12,     // one process when several profiles are shown together
  kGpuInstruction = 13,  // one instruction of a kernel (format 1.1): name
                         // "pc 0x<offset>", sampled with stall reasons
};
inline constexpr uint8_t kMaxFrameKind = 13;

// Returns a short lower-case name ("python", "operator", ...) for display.
const char* FrameKindName(FrameKind kind);

// String ids index Profile::strings; id 0 is always the empty string.
using StringId = uint32_t;
// Node ids index Profile::nodes; node 0 is always the root.
using NodeId = uint32_t;
using MetricId = uint32_t;

struct Node {
  NodeId parent = 0;  // the root is its own parent
  FrameKind kind = FrameKind::kRoot;
  StringId name = 0;
  StringId file = 0;  // 0 when unknown
  uint32_t line = 0;  // 0 when unknown
};

// How values of a metric combine when the same node appears in several
// profiles, and how it is shown.
struct MetricDescriptor {
  std::string name;         // "cpu_time", "calls", ...
  std::string unit;         // "ns", "count", "bytes"
  std::string description;  // one line for humans
};

// Online aggregate of every sample of one metric at one node. The runtime
// records exclusive samples (time spent in the node itself, not in its
// children); inclusive values are computed offline by summing subtrees.
struct MetricValue {
  NodeId node = 0;
  MetricId metric = 0;
  uint64_t count = 0;  // number of samples aggregated
  double sum = 0;
  double min = 0;
  double max = 0;
};

struct Profile {
  // Free-form key/value metadata: command_line, start_time_ns, end_time_ns,
  // host, pid, rank, python_version, torch_version, ... (see docs/FORMAT.md).
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<std::string> strings{""};
  std::vector<Node> nodes{Node{}};
  std::vector<MetricDescriptor> metrics;
  std::vector<MetricValue> values;  // sparse: only (node, metric) pairs seen

  // Returns the metadata value for key, or "" when absent.
  std::string Metadata(const std::string& key) const;
};

}  // namespace deepcontext::format

// Hand-built profiles for the analysis and report tests, so those tests do
// not depend on the file reader.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/profile_data.h"
#include "tools/analysis/profile_tree.h"

namespace deepcontext::analysis::testing {

// Appends nodes, metrics and values to a format::Profile with little typing.
class ProfileBuilder {
 public:
  // Returns the id of the metric called name, adding it when new.
  format::MetricId Metric(const std::string& name,
                          const std::string& unit = "ns",
                          const std::string& description = "");

  // Adds a node under parent and returns its id.
  format::NodeId Add(format::NodeId parent, format::FrameKind kind,
                     const std::string& name, const std::string& file = "",
                     uint32_t line = 0);

  // Records one aggregated sample set: sum over count samples, min and max
  // spread around the mean so merges can be checked.
  void Value(format::NodeId node, const std::string& metric, double sum,
             uint64_t count = 1);

  // Adds metadata key=value.
  void Meta(const std::string& key, const std::string& value);

  format::Profile& profile() { return profile_; }

 private:
  format::StringId Intern(const std::string& text);

  format::Profile profile_;
};

// Node ids of the training example profile (see MakeTrainingProfile).
struct TrainingNodes {
  format::NodeId main_thread, module, train_step, forward, phase_forward,
      conv2d, convolution, phase_backward, conv_backward_op, conv_backward,
      autograd_thread, autograd_conv_backward_op, autograd_conv_backward;
};

// Builds the tree a PyTorch training step produces, with cpu_time (ns) and
// calls; exclusive cpu_time in ms:
//   thread main                                    0
//     <module> /home/user/proj/train.py:40         1
//       train_step /home/user/proj/train.py:22     2
//         forward .../site-packages/mylib/model.py:10   3
//           [forward]                              0
//             aten::conv2d                         4   (10 calls)
//               aten::convolution                 50   (10 calls)
//           [backward]                             0
//             ConvolutionBackward0                 5   (10 calls)
//               aten::convolution_backward        30   (10 calls)
//   thread pt_autograd_0                           0
//     ConvolutionBackward0                         1   (2 calls)
//       aten::convolution_backward                 4   (2 calls)
// Total 100 ms. Metadata: pid 4242, host gpu01, rank 0, 2 s duration.
format::Profile MakeTrainingProfile(TrainingNodes* nodes = nullptr);

// The same profile as written by another process of the job: its "pid" and
// "rank" metadata replaced.
format::Profile MakeTrainingProfileOf(const std::string& pid,
                                      const std::string& rank);

// Returns the node reached from the root by following children whose
// DisplayName matches each element of path, or nullopt.
std::optional<NodeIndex> FindNode(const ProfileTree& tree,
                                  const std::vector<std::string>& path);

// Milliseconds in the profile's ns unit.
inline constexpr double kMs = 1e6;

}  // namespace deepcontext::analysis::testing

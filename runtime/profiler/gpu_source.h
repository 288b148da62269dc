// The session's view of GPU collection: started when this build has a GPU
// backend and the machine can use it, absent otherwise (with a sentence
// saying why, recorded in the profile as metadata "gpu").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/profiler/metric_store.h"

namespace deepcontext::profiler {

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  // Hands every finished GPU record to the store. [any thread]
  virtual void Flush() = 0;
  // Ends tracing once the GPU work in flight has finished, and hands every
  // record to the store; Metadata() still answers afterwards. Destroying
  // the source then releases the tracing library (see
  // runtime/cupti/cupti_detach.h).
  virtual void Stop() = 0;
  // Pauses (false) or resumes (true) collection between trace windows.
  // [any thread]
  virtual void SetTracing(bool on) = 0;
  // The shortest pause between the session's trace windows, before they
  // start: long pauses let the source release the tracing library in
  // between.
  virtual void SetShortestPause(int64_t pause_ns) = 0;
  virtual std::vector<std::pair<std::string, std::string>> Metadata() const = 0;
};

// Starts GPU collection into `store`. nullptr when this build or machine has
// no usable GPU backend, or DEEPCONTEXT_GPU=0; *status says which.
std::unique_ptr<GpuSource> StartGpuSource(MetricStore& store,
                                          std::string* status);

}  // namespace deepcontext::profiler

// Loads libcupti with dlopen at run time, so one build of the runtime works
// on machines with and without CUDA: a missing or mismatched CUPTI is
// reported with a clear reason and the profiler carries on CPU-only. This
// header does not include the vendor headers; code that calls CUPTI
// includes runtime/cupti/cupti_functions.h (from .cc files only).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace deepcontext::cupti {

struct CuptiFunctions;  // runtime/cupti/cupti_functions.h

struct CuptiLoadOptions {
  // Reuse a libcupti already loaded into the process (e.g. by PyTorch)
  // before trying to load one: two copies cannot both trace.
  bool use_loaded = true;
  // Libraries tried in order; empty = DefaultCuptiCandidates().
  std::vector<std::string> candidates;
};

// Where libcupti is looked for: $DEEPCONTEXT_CUPTI_LIBRARY, the loader's
// search path (libcupti.so.<major>, libcupti.so), then $CUDA_HOME and
// /usr/local/cuda in their CUPTI, targets and lib64 folders.
std::vector<std::string> DefaultCuptiCandidates();

class CuptiLibrary {
 public:
  // Loads libcupti once per process with the default options. [any thread]
  static const CuptiLibrary& Get();
  // Loads with explicit options; for tests and diagnostics. Never throws.
  static std::unique_ptr<CuptiLibrary> Load(const CuptiLoadOptions& options);
  // A library whose entry points are given, reporting `version` as its
  // cuptiGetVersion(): lets tests drive the backend with a fake CUPTI.
  static std::unique_ptr<CuptiLibrary> FromFunctions(const CuptiFunctions& functions,
                                                     uint32_t version,
                                                     const std::string& path);

  CuptiLibrary(const CuptiLibrary&) = delete;
  CuptiLibrary& operator=(const CuptiLibrary&) = delete;
  // Keeps the library loaded: CUPTI owns threads and callbacks that must
  // not outlive its code.
  ~CuptiLibrary();

  bool available() const { return functions_ != nullptr; }
  // Ok when available, otherwise the error "not available: <reason>".
  const Status& status() const { return status_; }
  // The file that was loaded (or found already loaded).
  const std::string& path() const { return path_; }
  // cuptiGetVersion() of the loaded library and CUPTI_API_VERSION of the
  // headers this runtime was built with.
  uint32_t runtime_version() const { return runtime_version_; }
  uint32_t header_version() const { return header_version_; }
  // The resolved entry points; nullptr unless available().
  const CuptiFunctions* functions() const { return functions_.get(); }
  // CUPTI's text for a result code; "" when unavailable.
  std::string ResultString(int result) const;

 private:
  CuptiLibrary() = default;
  // Resolves the entry points and checks the version; on success the
  // library is available.
  Status Resolve(void* handle, const std::string& path);

  void* handle_ = nullptr;
  Status status_;
  std::string path_;
  uint32_t runtime_version_ = 0;
  uint32_t header_version_ = 0;
  std::unique_ptr<CuptiFunctions> functions_;
};

// CUDA major version encoded in a CUPTI API version: 130001 -> 13; the
// pre-13 scheme (small integers, e.g. 27 = 12.9) -> 12 or less.
int CuptiApiMajor(uint32_t api_version);

}  // namespace deepcontext::cupti

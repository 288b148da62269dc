#include "runtime/cupti/cupti_loader.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <utility>

#include "runtime/cupti/cupti_functions.h"

namespace deepcontext::cupti {
namespace {

constexpr int kHeaderMajor = CUPTI_API_VERSION >= 100000
                                 ? CUPTI_API_VERSION / 10000
                                 : 12;

std::string SonameForHeaders() {
  return "libcupti.so." + std::to_string(kHeaderMajor);
}

// The file a handle refers to, for diagnostics.
std::string PathOf(void* handle, const std::string& fallback) {
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr &&
      map->l_name != nullptr && map->l_name[0] != '\0') {
    return map->l_name;
  }
  return fallback;
}

template <typename Fn>
bool Lookup(void* handle, const char* name, Fn* slot, std::string* missing) {
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    if (!missing->empty()) *missing += ", ";
    *missing += name;
    return false;
  }
  *slot = reinterpret_cast<Fn>(symbol);
  return true;
}

}  // namespace

int CuptiApiMajor(uint32_t api_version) {
  // CUDA 13 switched to major * 10000 + minor * 100 + patch; before, the
  // API version was a small counter (CUDA 12.9 = 27).
  return api_version >= 100000 ? static_cast<int>(api_version / 10000) : 12;
}

std::vector<std::string> DefaultCuptiCandidates() {
  std::vector<std::string> out;
  if (const char* explicit_path = std::getenv("DEEPCONTEXT_CUPTI_LIBRARY")) {
    if (explicit_path[0] != '\0') out.push_back(explicit_path);
  }
  const std::string soname = SonameForHeaders();
  out.push_back(soname);
  out.push_back("libcupti.so");
  std::vector<std::string> roots;
  if (const char* cuda_home = std::getenv("CUDA_HOME")) {
    if (cuda_home[0] != '\0') roots.push_back(cuda_home);
  }
  roots.push_back("/usr/local/cuda");
  for (const std::string& root : roots) {
    for (const char* dir : {"/extras/CUPTI/lib64/", "/targets/x86_64-linux/lib/",
                            "/lib64/"}) {
      out.push_back(root + dir + soname);
      out.push_back(root + dir + "libcupti.so");
    }
  }
  return out;
}

const CuptiLibrary& CuptiLibrary::Get() {
  // Leaked on purpose: CUPTI threads may still call into it at exit.
  static const CuptiLibrary* library = Load(CuptiLoadOptions{}).release();
  return *library;
}

CuptiLibrary::~CuptiLibrary() = default;

std::unique_ptr<CuptiLibrary> CuptiLibrary::Load(const CuptiLoadOptions& options) {
  std::unique_ptr<CuptiLibrary> library(new CuptiLibrary());
  library->header_version_ = CUPTI_API_VERSION;
  const std::vector<std::string> candidates =
      options.candidates.empty() ? DefaultCuptiCandidates() : options.candidates;

  void* handle = nullptr;
  std::string opened;
  if (options.use_loaded) {
    for (const std::string& name : {SonameForHeaders(), std::string("libcupti.so")}) {
      handle = dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD);
      if (handle != nullptr) {
        opened = name;
        break;
      }
    }
  }
  std::string last_error;
  for (size_t i = 0; handle == nullptr && i < candidates.size(); ++i) {
    handle = dlopen(candidates[i].c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      opened = candidates[i];
    } else if (const char* error = dlerror()) {
      last_error = error;
    }
  }
  if (handle == nullptr) {
    std::string tried;
    for (const std::string& candidate : candidates) {
      if (!tried.empty()) tried += ", ";
      tried += candidate;
    }
    std::string message = "not available: libcupti not found (tried " + tried + ")";
    if (!last_error.empty()) message += "; last error: " + last_error;
    library->status_ = Status::Error(std::move(message));
    return library;
  }
  library->status_ = library->Resolve(handle, PathOf(handle, opened));
  return library;
}

std::unique_ptr<CuptiLibrary> CuptiLibrary::FromFunctions(
    const CuptiFunctions& functions, uint32_t version, const std::string& path) {
  std::unique_ptr<CuptiLibrary> library(new CuptiLibrary());
  library->header_version_ = CUPTI_API_VERSION;
  library->runtime_version_ = version;
  library->path_ = path;
  library->functions_ = std::make_unique<CuptiFunctions>(functions);
  return library;
}

Status CuptiLibrary::Resolve(void* handle, const std::string& path) {
  handle_ = handle;
  path_ = path;
  auto functions = std::make_unique<CuptiFunctions>();
  std::string missing;
  CuptiFunctions& f = *functions;
  Lookup(handle, "cuptiGetVersion", &f.get_version, &missing);
  Lookup(handle, "cuptiGetResultString", &f.get_result_string, &missing);
  Lookup(handle, "cuptiSubscribe", &f.subscribe, &missing);
  Lookup(handle, "cuptiUnsubscribe", &f.unsubscribe, &missing);
  Lookup(handle, "cuptiEnableDomain", &f.enable_domain, &missing);
  Lookup(handle, "cuptiEnableCallback", &f.enable_callback, &missing);
  Lookup(handle, "cuptiActivityEnable", &f.activity_enable, &missing);
  Lookup(handle, "cuptiActivityDisable", &f.activity_disable, &missing);
  Lookup(handle, "cuptiActivityRegisterCallbacks",
         &f.activity_register_callbacks, &missing);
  Lookup(handle, "cuptiActivityFlushAll", &f.activity_flush_all, &missing);
  Lookup(handle, "cuptiActivityGetNextRecord", &f.activity_get_next_record,
         &missing);
  Lookup(handle, "cuptiActivityGetNumDroppedRecords",
         &f.activity_get_num_dropped_records, &missing);
  Lookup(handle, "cuptiGetCallbackName", &f.get_callback_name, &missing);
  Lookup(handle, "cuptiGetGraphNodeId", &f.get_graph_node_id, &missing);
  Lookup(handle, "cuptiFinalize", &f.finalize, &missing);
  Lookup(handle, "cuptiGetTimestamp", &f.get_timestamp, &missing);
  std::string optional_missing;
  Lookup(handle, "cuptiSubscribe_v2", &f.subscribe_v2, &optional_missing);
  Lookup(handle, "cuptiGetGraphExecId", &f.get_graph_exec_id, &optional_missing);
  Lookup(handle, "cuptiActivitySetAttribute", &f.activity_set_attribute,
         &optional_missing);
  Lookup(handle, "cuptiGetDeviceId", &f.get_device_id, &optional_missing);
  if (!missing.empty()) {
    return Status::Error("not available: " + path + " lacks " + missing);
  }
  uint32_t version = 0;
  if (f.get_version(&version) != CUPTI_SUCCESS) {
    return Status::Error("not available: cuptiGetVersion failed in " + path);
  }
  runtime_version_ = version;
  // Activity record layouts change between major versions; parsing records
  // of another major with these headers would read garbage.
  if (CuptiApiMajor(version) != kHeaderMajor) {
    return Status::Error("not available: " + path + " is CUPTI API version " +
                         std::to_string(version) + " (CUDA " +
                         std::to_string(CuptiApiMajor(version)) +
                         "), but this runtime was built for CUPTI API version " +
                         std::to_string(header_version_) + " (CUDA " +
                         std::to_string(kHeaderMajor) + ")");
  }
  functions_ = std::move(functions);
  return Status::Ok();
}

std::string CuptiLibrary::ResultString(int result) const {
  if (!functions_) return "";
  const char* text = nullptr;
  if (functions_->get_result_string(static_cast<CUptiResult>(result), &text) !=
          CUPTI_SUCCESS ||
      text == nullptr) {
    return "CUPTI error " + std::to_string(result);
  }
  return text;
}

}  // namespace deepcontext::cupti

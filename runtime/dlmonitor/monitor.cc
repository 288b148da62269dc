#include "runtime/dlmonitor/monitor.h"

#include <pthread.h>

#include "runtime/python/python_frames.h"

namespace deepcontext::dlmonitor {
namespace {

bool InitializePython(std::string* status) {
  std::string why;
  if (python::Initialize(&why)) {
    *status = std::string("python ") + python::VersionString();
    return true;
  }
  *status = "no python frames: " + why;
  return false;
}

void ResetChildAfterFork() { Monitor::Instance().paths().ResetAfterFork(); }

}  // namespace

Monitor::Monitor()
    : python_enabled_(InitializePython(&python_status_)),
      python_frames_(strings_),
      paths_(tree_, strings_, links_, python_frames_, python_enabled_) {
  description_ = std::to_string(DLMONITOR_VERSION_MAJOR) + "." +
                 std::to_string(DLMONITOR_VERSION_MINOR) + " (" +
                 python_status_ + ")";
  pthread_atfork(nullptr, nullptr, &ResetChildAfterFork);
}

void Monitor::EnableNative(bool on) {
  const char* unwinder = paths_.EnableNative(on);
  if (!on) return;
  std::call_once(native_once_, [this, unwinder] {
    native_description_ = description_;
    native_description_.insert(native_description_.size() - 1,
                               std::string(", native: ") + unwinder);
    native_described_.store(true, std::memory_order_release);
  });
}

Monitor& Monitor::Instance() {
  static Monitor* instance = new Monitor();
  return *instance;
}

}  // namespace deepcontext::dlmonitor

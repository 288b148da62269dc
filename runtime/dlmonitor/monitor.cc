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

Monitor& Monitor::Instance() {
  static Monitor* instance = new Monitor();
  return *instance;
}

}  // namespace deepcontext::dlmonitor

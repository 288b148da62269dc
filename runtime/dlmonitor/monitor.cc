#include "runtime/dlmonitor/monitor.h"

#include <pthread.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "runtime/python/python_frames.h"

namespace deepcontext::dlmonitor {
namespace {

bool InitializePython(std::string* status) {
  const Status initialized = python::Initialize();
  if (initialized.ok()) {
    *status = std::string("python ") + python::VersionString();
    return true;
  }
  *status = "no python frames: " + initialized.message();
  return false;
}

void ResetChildAfterFork() { Monitor::Instance().paths().ResetAfterFork(); }

// $DEEPCONTEXT_MAX_CONTEXTS (deepcontext run --max-contexts): a positive
// number of contexts, or 0 for no cap. A bad value is reported and the
// default kept, since a user's program cannot be stopped for it.
ContextId MaxContexts() {
  const char* text = std::getenv("DEEPCONTEXT_MAX_CONTEXTS");
  if (text == nullptr || text[0] == '\0') return kDefaultMaxContexts;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (errno == 0 && end != text && *end == '\0' && text[0] != '-') {
    return static_cast<ContextId>(value);
  }
  std::fprintf(stderr,
               "deepcontext: warning: DEEPCONTEXT_MAX_CONTEXTS=%s is not a "
               "whole number of contexts; keeping at most %llu\n",
               text, static_cast<unsigned long long>(kDefaultMaxContexts));
  return kDefaultMaxContexts;
}

}  // namespace

Monitor::Monitor()
    : python_enabled_(InitializePython(&python_status_)),
      python_frames_(strings_),
      paths_(tree_, strings_, links_, python_frames_, python_enabled_) {
  description_ = std::to_string(DLMONITOR_VERSION_MAJOR) + "." +
                 std::to_string(DLMONITOR_VERSION_MINOR) + " (" +
                 python_status_ + ")";
  // Past the cap, new call paths are folded into one marked node under the
  // deepest context they share with known paths, so a program with
  // unboundedly many paths keeps a bounded profile that says so.
  tree_.SetLimit(MaxContexts(),
                 FrameKey{DLMONITOR_FRAME_USER_SCOPE,
                          strings_.Intern(kOtherContextsName), 0, 0});
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

}  // namespace deepcontext::dlmonitor

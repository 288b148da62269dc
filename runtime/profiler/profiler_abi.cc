// The C API of include/deepcontext/profiler.h.
#include "deepcontext/profiler.h"

#include <cstdint>
#include <string>

#include "runtime/profiler/session.h"
#include "runtime/profiler/signal_guard.h"

using deepcontext::profiler::Session;

namespace {

using deepcontext::Status;

thread_local std::string last_error;

// 0, or -1 with the message for deepcontext_last_error().
int Result(const Status& status) {
  last_error = status.message();
  return status.ok() ? 0 : -1;
}

template <typename Body>
int Guarded(Body&& body) {
  try {
    return Result(body());
  } catch (const std::exception& e) {
    return Result(Status::Error(std::string("internal error: ") + e.what()));
  } catch (...) {
    return Result(Status::Error("internal error"));
  }
}

}  // namespace

extern "C" {

int deepcontext_start(void) {
  return Guarded([] { return Session::Instance().Start(); });
}

int deepcontext_stop(void) {
  return Guarded([] { return Session::Instance().Stop(); });
}

int deepcontext_is_active(void) { return Session::Instance().active() ? 1 : 0; }

int deepcontext_is_tracing(void) { return Session::Instance().tracing() ? 1 : 0; }

int deepcontext_write(const char* path) {
  if (path == nullptr || *path == '\0') return Result(Status::Error("no output path given"));
  return Guarded([path] { return Session::Instance().Write(path); });
}

int deepcontext_set_metadata(const char* key, const char* value) {
  if (key == nullptr || value == nullptr) return Result(Status::Error("null key or value"));
  return Guarded([key, value] {
    Session::Instance().SetMetadata(key, value);
    return Status::Ok();
  });
}

int deepcontext_set_op_cpu_time(int mode) {
  if (mode < 0 || mode > 2) {
    return Result(Status::Error("op CPU time mode must be 0 (off), 1 (exact) or 2 (sampled)"));
  }
  return Guarded([mode] {
    Session::Instance().SetOpCpuTime(
        static_cast<deepcontext::profiler::OpMetrics::CpuTimeMode>(mode));
    return Status::Ok();
  });
}

int deepcontext_set_trace_windows(double fraction, int64_t window_us) {
  deepcontext::profiler::TraceWindowOptions options;
  options.fraction = fraction;
  // Saturates instead of overflowing; the range check then rejects it.
  options.window_ns = window_us > INT64_MAX / 1000 || window_us < INT64_MIN / 1000
                          ? INT64_MAX
                          : window_us * 1000;
  return Guarded([&options] {
    return Session::Instance().SetTraceWindows(options);
  });
}

int deepcontext_set_op_switch(deepcontext_op_switch_fn op_switch) {
  Session::Instance().SetOpSwitch(op_switch);
  return Result(Status::Ok());
}

int deepcontext_reset(void) {
  return Guarded([] {
    Session::Instance().Reset();
    return Status::Ok();
  });
}

int deepcontext_guard_signal(int signum) {
  return Guarded([signum] { return deepcontext::profiler::GuardSignal(signum); });
}

void deepcontext_signal_handled(void) {
  deepcontext::profiler::AcknowledgeSignal();
}

const char* deepcontext_gpu_status(void) {
  return Session::Instance().gpu_status();
}

const char* deepcontext_last_error(void) { return last_error.c_str(); }

const char* deepcontext_version(void) { return DEEPCONTEXT_VERSION; }

}  // extern "C"

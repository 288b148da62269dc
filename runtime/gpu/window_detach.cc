#include "runtime/gpu/window_detach.h"

#include <algorithm>
#include <thread>

#include "runtime/cpu/clocks.h"

namespace deepcontext::gpu {
namespace {

void RaiseMax(std::atomic<int64_t>& max, int64_t value) {
  int64_t seen = max.load(std::memory_order_relaxed);
  while (value > seen &&
         !max.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

std::string Microseconds(int64_t ns) { return std::to_string(ns / 1000); }

}  // namespace

void WindowDetach::Quiet() { state_.store(State::kQuiet, std::memory_order_release); }

void WindowDetach::Ask() { state_.store(State::kAsked, std::memory_order_release); }

bool WindowDetach::OnApiExit(const std::function<void()>& finalize) {
  State asked = State::kAsked;
  if (!state_.compare_exchange_strong(asked, State::kDetaching,
                                      std::memory_order_acq_rel)) {
    return false;
  }
  const int64_t start = cpu::MonotonicNs();
  finalize();
  const int64_t spent = cpu::MonotonicNs() - start;
  detaches_.fetch_add(1, std::memory_order_relaxed);
  detach_total_ns_.fetch_add(spent, std::memory_order_relaxed);
  RaiseMax(detach_max_ns_, spent);
  state_.store(State::kDetached, std::memory_order_release);
  return true;
}

WindowDetach::Resumed WindowDetach::EndPause(std::chrono::nanoseconds timeout) {
  State state = State::kAsked;
  if (state_.compare_exchange_strong(state, State::kQuiet,
                                     std::memory_order_acq_rel)) {
    ++called_off_;
    return Resumed::kStillAttached;
  }
  if (state == State::kAttached || state == State::kQuiet) {
    state_.store(State::kQuiet, std::memory_order_release);
    return Resumed::kStillAttached;
  }
  // Detaching takes an application thread milliseconds at most; it needs
  // nothing the pausing thread holds.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (state_.load(std::memory_order_acquire) == State::kDetaching) {
    if (std::chrono::steady_clock::now() >= deadline) return Resumed::kStuck;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return Resumed::kDetached;
}

void WindowDetach::Attached() {
  state_.store(State::kAttached, std::memory_order_release);
}

void WindowDetach::RecordAttach(int64_t ns) {
  ++attaches_;
  attach_total_ns_ += ns;
  attach_max_ns_ = std::max(attach_max_ns_, ns);
}

WindowDetach::Stats WindowDetach::stats() const {
  Stats out;
  out.detaches = detaches_.load(std::memory_order_relaxed);
  out.detach_max_ns = detach_max_ns_.load(std::memory_order_relaxed);
  out.detach_total_ns = detach_total_ns_.load(std::memory_order_relaxed);
  out.called_off = called_off_;
  out.attaches = attaches_;
  out.attach_max_ns = attach_max_ns_;
  out.attach_total_ns = attach_total_ns_;
  return out;
}

std::vector<std::pair<std::string, std::string>> WindowDetachMetadata(
    const WindowDetach::Stats& stats, const std::string& error) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("gpu_window_detaches", std::to_string(stats.detaches));
  if (stats.detaches > 0) {
    out.emplace_back("gpu_window_detach_mean_us",
                     Microseconds(stats.detach_total_ns /
                                  static_cast<int64_t>(stats.detaches)));
    out.emplace_back("gpu_window_detach_max_us", Microseconds(stats.detach_max_ns));
  }
  if (stats.attaches > 0) {
    out.emplace_back("gpu_window_attach_mean_us",
                     Microseconds(stats.attach_total_ns /
                                  static_cast<int64_t>(stats.attaches)));
    out.emplace_back("gpu_window_attach_max_us", Microseconds(stats.attach_max_ns));
  }
  out.emplace_back("gpu_window_detach_called_off", std::to_string(stats.called_off));
  if (!error.empty()) out.emplace_back("gpu_window_error", error);
  return out;
}

}  // namespace deepcontext::gpu

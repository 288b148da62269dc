#include "runtime/cpu/perf_counters.h"

#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <fstream>

namespace deepcontext::cpu {
namespace {

constexpr CounterEvent kDefaultEvents[] = {
    {"cpu_cycles", "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES,
     "CPU cycles in user space (hardware counter, charged like sampled CPU time)"},
    {"cpu_instructions", "instructions", PERF_TYPE_HARDWARE,
     PERF_COUNT_HW_INSTRUCTIONS,
     "instructions retired in user space (hardware counter)"},
    {"cpu_cache_misses", "cache misses", PERF_TYPE_HARDWARE,
     PERF_COUNT_HW_CACHE_MISSES,
     "last-level cache misses in user space (hardware counter)"},
};

class KernelSyscalls final : public PerfSyscalls {
 public:
  int Open(const perf_event_attr& attr, pid_t tid, int group_fd) override {
    const long fd = syscall(SYS_perf_event_open, &attr, tid, -1, group_fd,
                            PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : static_cast<int>(fd);
  }
  int Enable(int fd) override {
    return ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0 ? -errno : 0;
  }
  ssize_t Read(int fd, void* buffer, size_t size) override {
    const ssize_t got = read(fd, buffer, size);
    return got < 0 ? -errno : got;
  }
  void Close(int fd) override { close(fd); }
};

perf_event_attr AttrOf(const CounterEvent& event, bool leader) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = event.type;
  attr.config = event.config;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  if (leader) {
    // Members are opened enabled and start with the leader: see
    // ThreadCounters::Open.
    attr.disabled = 1;
    attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED |
                       PERF_FORMAT_TOTAL_TIME_RUNNING;
  }
  return attr;
}

std::string Paranoid() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  std::string level;
  in >> level;
  return level;
}

// Why perf_event_open failed, in words a user can act on.
std::string Explain(int error) {
  switch (error) {
    case ENOENT:
    case EOPNOTSUPP:
    case ENODEV:
      return "this kernel or VM exposes no such hardware counters";
    case EACCES:
    case EPERM: {
      const std::string level = Paranoid();
      return "not permitted (kernel.perf_event_paranoid" +
             (level.empty() ? std::string() : " = " + level) + ")";
    }
    case ENOSYS:
      return "this kernel has no perf_event_open";
    default:
      return "unexpected error";
  }
}

}  // namespace

std::span<const CounterEvent> DefaultCounterEvents() { return kDefaultEvents; }

PerfSyscalls& KernelPerfSyscalls() {
  static KernelSyscalls* syscalls = new KernelSyscalls();
  return *syscalls;
}

CounterProbe Probe(PerfSyscalls& syscalls, std::span<const CounterEvent> events) {
  CounterProbe probe;
  // Refused events grouped by errno, so that the usual case (a VM without
  // hardware counters) reads as one short clause.
  std::vector<std::pair<int, std::string>> refused;
  for (const CounterEvent& event : events) {
    const int fd = syscalls.Open(AttrOf(event, true), 0, -1);
    if (fd >= 0) {
      syscalls.Close(fd);
      probe.usable.push_back(event);
      continue;
    }
    auto same = std::find_if(refused.begin(), refused.end(),
                             [fd](const auto& entry) { return entry.first == -fd; });
    if (same == refused.end()) {
      refused.emplace_back(-fd, std::string(event.label));
    } else {
      same->second += ", " + std::string(event.label);
    }
  }
  if (refused.empty()) return probe;
  std::string text;
  for (const auto& [error, labels] : refused) {
    if (!text.empty()) text += "; ";
    text += "perf_event_open(" + labels + "): " + std::strerror(error) + " (" +
            Explain(error) + ")";
  }
  probe.warning = (probe.usable.empty() ? "CPU counters unavailable: "
                                        : "some CPU counters unavailable: ") +
                  text;
  return probe;
}

StatusOr<std::unique_ptr<ThreadCounters>> ThreadCounters::Open(
    PerfSyscalls& syscalls, std::span<const CounterEvent> events, pid_t tid) {
  std::vector<int> fds;
  for (size_t i = 0; i < events.size(); ++i) {
    const int fd = syscalls.Open(AttrOf(events[i], i == 0), tid,
                                 fds.empty() ? -1 : fds[0]);
    if (fd < 0) {
      for (int open : fds) syscalls.Close(open);
      return Status::Error("perf_event_open(" + std::string(events[i].label) +
                           "): " + std::strerror(-fd));
    }
    fds.push_back(fd);
  }
  if (fds.empty()) return Status::Error("no CPU counter events");
  // Without PERF_IOC_FLAG_GROUP: enabling the members one by one would
  // again leave those of another PMU stopped until a context switch.
  if (const int enabled = syscalls.Enable(fds[0]); enabled < 0) {
    for (size_t i = fds.size(); i > 0; --i) syscalls.Close(fds[i - 1]);
    return Status::Error(std::string("PERF_EVENT_IOC_ENABLE: ") + std::strerror(-enabled));
  }
  return std::unique_ptr<ThreadCounters>(new ThreadCounters(syscalls, std::move(fds)));
}

ThreadCounters::~ThreadCounters() {
  // Members first: closing the leader first would detach them.
  for (size_t i = fds_.size(); i > 0; --i) syscalls_.Close(fds_[i - 1]);
}

bool ThreadCounters::Read(std::vector<uint64_t>* counts) {
  // PERF_FORMAT_GROUP with both times: nr, time_enabled, time_running,
  // then one value per event.
  std::vector<uint64_t> buffer(3 + fds_.size());
  const ssize_t want = static_cast<ssize_t>(buffer.size() * sizeof(uint64_t));
  if (syscalls_.Read(fds_[0], buffer.data(), static_cast<size_t>(want)) != want ||
      buffer[0] != fds_.size()) {
    return false;
  }
  const uint64_t enabled = buffer[1];
  const uint64_t running = buffer[2];
  counts->resize(fds_.size());
  for (size_t i = 0; i < fds_.size(); ++i) {
    uint64_t value = buffer[3 + i];
    // Multiplexed: the counter ran for part of the time; estimate the whole.
    if (running > 0 && running < enabled) {
      value = static_cast<uint64_t>(static_cast<double>(value) *
                                    static_cast<double>(enabled) /
                                    static_cast<double>(running));
    }
    (*counts)[i] = value;
  }
  return true;
}

void CountDeltas(const std::vector<uint64_t>& now, std::vector<uint64_t>* last,
                 std::vector<uint64_t>* deltas) {
  if (last->size() != now.size()) last->assign(now.size(), 0);
  deltas->assign(now.size(), 0);
  for (size_t i = 0; i < now.size(); ++i) {
    if (now[i] < (*last)[i]) continue;
    (*deltas)[i] = now[i] - (*last)[i];
    (*last)[i] = now[i];
  }
}

}  // namespace deepcontext::cpu

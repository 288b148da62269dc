// Hardware counters of one thread through perf_event_open: cycles,
// instructions and cache misses, read as one group so that the values of a
// reading belong together. The CPU sampler (runtime/profiler/cpu_sampler.h)
// reads each registered thread's group at every tick and charges the
// differences to the op running then, as it does with CPU time.
//
// Many VMs and containers expose no hardware counters (perf_event_open says
// ENOENT) or forbid them (EACCES / EPERM, perf_event_paranoid): `Probe`
// tells, in one line, before any thread opens its group. The system calls go
// through `PerfSyscalls` so that tests can stand in for the kernel.
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace deepcontext::cpu {

// One counted event and the metric it becomes in the profile.
struct CounterEvent {
  std::string_view metric;       // "cpu_cycles"
  std::string_view label;        // "cycles", for messages
  uint32_t type;                 // PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE, ...
  uint64_t config;               // PERF_COUNT_HW_CPU_CYCLES, ...
  std::string_view description;  // one line, stored with the metric
};

// cycles, instructions, cache misses (user space only: perf_event_paranoid
// 2, the common default, allows no more for unprivileged processes).
std::span<const CounterEvent> DefaultCounterEvents();

// The kernel interface, replaceable in tests. Errors come back as -errno.
class PerfSyscalls {
 public:
  virtual ~PerfSyscalls() = default;
  // perf_event_open(attr, tid, cpu -1, group_fd, PERF_FLAG_FD_CLOEXEC).
  virtual int Open(const perf_event_attr& attr, pid_t tid, int group_fd) = 0;
  // ioctl(fd, PERF_EVENT_IOC_ENABLE, 0): 0 or -errno.
  virtual int Enable(int fd) = 0;
  virtual ssize_t Read(int fd, void* buffer, size_t size) = 0;
  virtual void Close(int fd) = 0;
};
PerfSyscalls& KernelPerfSyscalls();

// What `Probe` found: the events that can be counted here, and for the
// others why not.
struct CounterProbe {
  std::vector<CounterEvent> usable;
  // "" when every event is usable; else one line for the profile, e.g.
  // "CPU counters unavailable: perf_event_open(cycles): No such file or
  // directory (this kernel or VM exposes no hardware counters)".
  std::string warning;
};
// Opens each event once on the calling thread and closes it again.
CounterProbe Probe(PerfSyscalls& syscalls, std::span<const CounterEvent> events);

// The counter group of one thread. Not thread-safe: the sampler reads it
// under its mutex.
class ThreadCounters {
 public:
  // Opens `events` (at least one) as one group counting thread `tid` (0:
  // the calling thread) in user space. The error names the event or the
  // call that failed, for the profile's counter warning.
  //
  // The leader is opened disabled and enabled once every member is in, so
  // the group starts counting as one: a group read carries only the
  // leader's enabled/running times, and scaling every member by them is
  // right only if the members ran whenever the leader did. Enabling a
  // group that already counts does not guarantee that: the kernel (seen on
  // 6.18) leaves a member of another PMU than the leader's (task clock and
  // cpu clock are two) stopped until the thread's next context switch.
  static StatusOr<std::unique_ptr<ThreadCounters>> Open(PerfSyscalls& syscalls,
                                                        std::span<const CounterEvent> events,
                                                        pid_t tid);
  ~ThreadCounters();
  ThreadCounters(const ThreadCounters&) = delete;
  ThreadCounters& operator=(const ThreadCounters&) = delete;

  size_t size() const { return fds_.size(); }
  // The counts since the group was opened, one per event in order, scaled
  // up by enabled/running time when the kernel multiplexed the counters.
  // false (and `counts` unchanged) when the read failed.
  bool Read(std::vector<uint64_t>* counts);

 private:
  ThreadCounters(PerfSyscalls& syscalls, std::vector<int> fds)
      : syscalls_(syscalls), fds_(std::move(fds)) {}
  PerfSyscalls& syscalls_;
  std::vector<int> fds_;  // fds_[0] leads the group
};

// Counts of a group's reading minus the previous one, per event: what the
// sampler charges. A counter that went backwards (scaling estimates can)
// contributes 0 and the previous value is kept as the base.
void CountDeltas(const std::vector<uint64_t>& now, std::vector<uint64_t>* last,
                 std::vector<uint64_t>* deltas);

}  // namespace deepcontext::cpu

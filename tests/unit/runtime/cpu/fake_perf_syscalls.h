// A stand-in for the kernel's perf_event_open: refuses chosen event types
// with an errno, hands out fds, and answers group reads with counts the test
// sets (plus enabled/running times for multiplexing).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "runtime/cpu/perf_counters.h"

namespace deepcontext::cpu {

class FakePerfSyscalls final : public PerfSyscalls {
 public:
  // Events of this (type, config) fail to open with `error` (an errno).
  void Refuse(uint32_t type, uint64_t config, int error) {
    refused_[{type, config}] = error;
  }
  // The counts the next reads of every group return.
  void SetCounts(std::vector<uint64_t> counts, uint64_t enabled = 100,
                 uint64_t running = 100) {
    counts_ = std::move(counts);
    enabled_ = enabled;
    running_ = running;
  }
  void FailReads(bool fail) { fail_reads_ = fail; }
  // PERF_EVENT_IOC_ENABLE fails with `error` (an errno; 0: succeeds).
  void FailEnables(int error) { enable_error_ = error; }

  int Open(const perf_event_attr& attr, pid_t tid, int group_fd) override {
    if (auto it = refused_.find({attr.type, attr.config}); it != refused_.end()) {
      return -it->second;
    }
    if (attr.exclude_kernel != 1) return -EACCES;  // perf_event_paranoid 2
    if (group_fd == -1 && (attr.read_format & PERF_FORMAT_GROUP) == 0) {
      return -EINVAL;  // leaders must be read as a group here
    }
    opens.push_back({attr.type, attr.config, tid, group_fd, attr.disabled == 1});
    ++open_fds;
    return next_fd_++;
  }
  ssize_t Read(int, void* buffer, size_t size) override {
    if (fail_reads_) return -EIO;
    std::vector<uint64_t> out = {counts_.size(), enabled_, running_};
    out.insert(out.end(), counts_.begin(), counts_.end());
    const size_t bytes = out.size() * sizeof(uint64_t);
    if (size < bytes) return -ENOSPC;
    std::memcpy(buffer, out.data(), bytes);
    return static_cast<ssize_t>(bytes);
  }
  int Enable(int fd) override {
    enables.push_back({fd, opens.size()});
    return -enable_error_;
  }
  void Close(int) override { --open_fds; }

  struct OpenCall {
    uint32_t type;
    uint64_t config;
    pid_t tid;
    int group_fd;
    bool disabled;
  };
  std::vector<OpenCall> opens;
  struct EnableCall {
    int fd;
    size_t opens_before;  // how many events had been opened then
  };
  std::vector<EnableCall> enables;
  int open_fds = 0;

 private:
  std::map<std::pair<uint32_t, uint64_t>, int> refused_;
  std::vector<uint64_t> counts_;
  uint64_t enabled_ = 100, running_ = 100;
  bool fail_reads_ = false;
  int enable_error_ = 0;
  int next_fd_ = 100;
};

}  // namespace deepcontext::cpu

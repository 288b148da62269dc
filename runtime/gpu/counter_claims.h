// One process at a time per GPU may drive its performance monitors
// (instruction sampling, hardware counters). The driver alone does not keep
// that rule: a process that enables PC sampling while another measures
// counters on the same GPU can be refused (CUPTI_ERROR_HARDWARE_BUSY), or
// be let in and crash later inside CUPTI when tracing stops, losing its
// profile. So each process claims the GPU first, host-wide, through an
// advisory lock (flock) on one file per device, named by its UUID, in
// $DEEPCONTEXT_LOCK_DIR or /tmp. The lock ends with the process, so a crash
// leaves no stale claim; while held, the file holds the holder's pid and
// command line for the message the next claimant shows (emptied when the
// claim ends; a holder that crashed and left its text is not named).
// Vendor-neutral: the backend turns a CUDA context into the device key.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/status.h"

namespace deepcontext::gpu {

class CounterClaims;

// A held claim; destroying it gives the device back (when it was the
// process's last claim on that device).
class CounterClaim {
 public:
  ~CounterClaim();
  CounterClaim(const CounterClaim&) = delete;
  CounterClaim& operator=(const CounterClaim&) = delete;

  const std::string& device_key() const { return key_; }
  // Why other processes are not kept off the device (the lock file could
  // not be opened); "" when they are.
  const std::string& uncoordinated() const { return uncoordinated_; }

 private:
  friend class CounterClaims;
  CounterClaim(CounterClaims* owner, std::string key, std::string uncoordinated)
      : owner_(owner), key_(std::move(key)), uncoordinated_(std::move(uncoordinated)) {}

  CounterClaims* owner_;  // null: no lock taken
  std::string key_;
  std::string uncoordinated_;
};

// Claims the GPU that a device context (a CUcontext) belongs to, for a
// session that is about to drive its monitors; the backend supplies it.
using ClaimDevice =
    std::function<StatusOr<std::unique_ptr<CounterClaim>>(void* device_context)>;

// What a session that drives a GPU's monitors keeps of its claims: how to
// claim (set by the backend; without it nothing is claimed) and why a claim
// could not keep other processes off, for its status. Not thread-safe: the
// sessions call it under their own lock.
class SessionClaims {
 public:
  void SetClaimDevice(ClaimDevice claim) { claim_device_ = std::move(claim); }
  // The claim on the GPU of `device_context`: null when nothing claims, an
  // error when another process holds that GPU.
  StatusOr<std::unique_ptr<CounterClaim>> Claim(void* device_context);
  // "; other processes not kept off the GPU: <why>", or "".
  std::string StatusNote() const;

 private:
  ClaimDevice claim_device_;
  std::string uncoordinated_;
};

class CounterClaims {
 public:
  // Lock files go in `directory`.
  explicit CounterClaims(std::string directory);
  ~CounterClaims();
  CounterClaims(const CounterClaims&) = delete;
  CounterClaims& operator=(const CounterClaims&) = delete;

  // The process's claims, in $DEEPCONTEXT_LOCK_DIR or /tmp. Forked children
  // let go of the parent's claims (they do not drive the monitors).
  static CounterClaims& ForProcess();

  // Claims device `key` (e.g. "GPU-5a1c...") for `purpose` ("GPU
  // instruction samples"). Claims within one process nest. An error names
  // the process that holds the device; a lock file that cannot be used
  // gives a claim whose uncoordinated() says why, rather than keeping the
  // user from measuring. Never blocks. [any thread]
  StatusOr<std::unique_ptr<CounterClaim>> Claim(const std::string& key,
                                                const std::string& purpose);

  // A claim on a device that could not be named, so no lock was taken;
  // uncoordinated() says why.
  static std::unique_ptr<CounterClaim> Unnamed(std::string why);

  const std::string& directory() const { return directory_; }
  // The lock file of device `key`.
  std::string PathFor(const std::string& key) const;

  // Fork handlers (ForProcess() registers them): the child closes its
  // copies of the lock files without unlocking the parent's locks.
  void LockBeforeFork();
  void UnlockAfterFork();
  void ForgetInChild();

 private:
  friend class CounterClaim;
  void Release(const std::string& key);

  struct Held {
    int fd = -1;  // -1: held without a lock file
    int claims = 0;
    std::string uncoordinated;  // why there is no lock file
    bool wrote_holder = false;  // the file names this process: emptied at release
  };
  const std::string directory_;
  std::mutex mutex_;
  std::unordered_map<std::string, Held> held_;
};

}  // namespace deepcontext::gpu

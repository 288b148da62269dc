// DEEPCONTEXT_NATIVE_STATS=1: where the time of `--native` goes, per capture
// site. A measurement on a machine without perf (the GPU image) can then say
// whether unwinding, copying anchor frames or building new paths costs what
// it costs. Off, a capture pays one load of a flag; on, two clock reads and
// a few relaxed atomic adds.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace deepcontext::native {

// Where a native stack is captured.
enum class CaptureSite : uint8_t {
  kOpEntry = 0,   // an op entered from Python (its entry stack)
  kInsideOp = 1,  // a GPU API call or allocation inside such an op
};
inline constexpr int kCaptureSiteCount = 2;

// What the capture's path lookup came to.
enum class CaptureOutcome : uint8_t {
  kReused = 0,      // the same frames as the previous capture, or as a kept
                    // trail (dlmonitor/inside_trails.h): their answer
  kCachedPath = 1,  // a path found in the thread's cache
  kNewPath = 2,     // first sight: spliced and added to the tree on this thread
  kNoStack = 3,     // nothing interned (table full, empty stack)
};
inline constexpr int kCaptureOutcomeCount = 4;

struct CaptureSample {
  CaptureSite site = CaptureSite::kOpEntry;
  CaptureOutcome outcome = CaptureOutcome::kCachedPath;
  int walked = 0;  // frames unwound
  int copied = 0;  // outer frames copied from an anchor
  bool anchored = false;  // the walk met an anchor
  // ... and it was the thread's previous capture at this site, not a live
  // one (an op's entry stack, for a call inside the op).
  bool met_previous = false;
  // The interned id of the frames keyed (0: none): ids grow in order of
  // first sight, so one above every id seen before is a new stack.
  uint32_t stack = 0;
  uint64_t unwind_ns = 0;  // in the unwinder
  uint64_t total_ns = 0;   // the whole capture, path lookup included
  const void* thread = nullptr;  // tells the capturing threads apart
};

// The call-path work a thread does per event, natively captured or not: the
// part of the profiler's cost the captures above belong to.
enum class PathCall : uint8_t {
  kOpEnter = 0,       // an op entered (its context built)
  kContextQuery = 1,  // a GPU API call's or allocation's context
  // A native frame named, a module's table read included: when it is first
  // read (a profile write, the DLMonitor ABI), not within the two above.
  kFrameName = 2,
};
inline constexpr int kPathCallCount = 3;

// A monotonic clock in ns for the samples.
inline uint64_t CaptureClockNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Reads DEEPCONTEXT_NATIVE_STATS; use CaptureStatsEnabled.
bool ReadCaptureStatsEnabled();

// Whether DEEPCONTEXT_NATIVE_STATS=1 (read once). Inline: every op asks,
// and a call would cost it one more line of code to fetch.
inline bool CaptureStatsEnabled() {
  static const bool enabled = ReadCaptureStatsEnabled();
  return enabled;
}

// Adds one capture. [any thread]
void RecordCapture(const CaptureSample& sample);

// Counts `count` frames a capture at `site` unwound (not copied from an
// anchor) in `module` (a file name; empty: outside every module), so that
// the statistics say which libraries a walk goes through. [any thread]
void RecordWalkedFrames(CaptureSite site, const std::string& module, int count);

// What became of a trail recorded for a call inside an op
// (dlmonitor/inside_trails.h), and why a call that unwound was not
// answered by one, for the statistics line.
enum class TrailOutcome : uint8_t {
  kKept = 0,
  kTooManySteps = 1,  // more steps than a trail keeps
  kFailed = 2,        // no trail (an unmodelled rule, no anchor met)
  kOtherStack = 3,    // not the stack the call's unwind gave
  // Calls that unwound:
  kNoEntryAnchor = 4,  // the thread's latest entry capture is not the op's
  kDidNotHold = 5,     // its key had trails, none of which held
  kMarked = 6,         // its key had none, and none was recorded again
  // Not kept, as kTooManySteps: more words than a trail keeps (steps
  // through frames whose CFA or rbp comes from a stack slot read more than
  // a return address).
  kTooManyWords = 7,
};
inline constexpr int kTrailOutcomeCount = 8;

// Adds one trail's outcome. [any thread]
void RecordTrailOutcome(TrailOutcome outcome);

// Adds one PathCall that took `ns`. [any thread]
void RecordPathCall(PathCall call, uint64_t ns);

// The clock read at a PathCall's start, and the sample at its end: out of
// line, so that the op path, which times itself only when the statistics
// are on, does not carry the clock's code.
[[gnu::noinline, gnu::cold]] uint64_t StartPathCall();
[[gnu::noinline, gnu::cold]] void EndPathCall(PathCall call, uint64_t start_ns);

// Times a PathCall from construction to destruction when the statistics
// are on.
class PathCallTimer {
 public:
  explicit PathCallTimer(PathCall call)
      : call_(call), start_ns_(CaptureStatsEnabled() ? StartPathCall() : 0) {}
  ~PathCallTimer() {
    if (start_ns_ != 0) [[unlikely]] EndPathCall(call_, start_ns_);
  }
  PathCallTimer(const PathCallTimer&) = delete;
  PathCallTimer& operator=(const PathCallTimer&) = delete;

 private:
  const PathCall call_;
  const uint64_t start_ns_;
};

// One line per site with counts, frames, new stacks and times; empty when disabled or
// nothing was captured. [any thread]
std::string CaptureStatsLine();

}  // namespace deepcontext::native

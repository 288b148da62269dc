#include "runtime/native/capture_stats.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/common/spin_lock.h"
#include "runtime/native/cfi_rules.h"
#include "runtime/native/module_map.h"
#include "runtime/native/stack_trail.h"
#include "runtime/native/walk_memo.h"

namespace deepcontext::native {
namespace {

struct SiteCounters {
  std::atomic<uint64_t> captures{0};
  std::atomic<uint64_t> anchored{0};
  std::atomic<uint64_t> met_previous{0};
  std::atomic<uint64_t> walked{0};
  std::atomic<uint64_t> copied{0};
  std::atomic<uint64_t> max_walked{0};
  std::atomic<uint64_t> unwind_ns{0};
  std::atomic<uint64_t> total_ns{0};
  std::atomic<uint64_t> new_stacks{0};
  std::atomic<uint64_t> outcomes[kCaptureOutcomeCount] = {};
  std::atomic<uint64_t> outcome_ns[kCaptureOutcomeCount] = {};
};

SiteCounters g_sites[kCaptureSiteCount];

// Capture times by power of four, from under 256 ns to 256 us and over.
constexpr int kTimeBuckets = 7;
std::atomic<uint64_t> g_time_buckets[kCaptureSiteCount][kTimeBuckets] = {};
std::atomic<uint64_t> g_trail_outcomes[kTrailOutcomeCount] = {};

int TimeBucket(uint64_t ns) {
  int bucket = 0;
  for (uint64_t bound = 256; bucket < kTimeBuckets - 1 && ns >= bound; bound *= 4) ++bucket;
  return bucket;
}

struct PathCallCounters {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> ns{0};
};
PathCallCounters g_path_calls[kPathCallCount];

// Threads seen capturing, per site (up to a bound; each keeps its last one
// in a thread-local-free way: the caller passes its state's address).
constexpr int kMaxThreadsSeen = 64;
SpinLock g_threads_lock;
const void* g_threads[kCaptureSiteCount][kMaxThreadsSeen] = {};
int g_thread_count[kCaptureSiteCount] = {};

void NoteThread(int site, const void* thread) {
  if (thread == nullptr) return;
  std::lock_guard<SpinLock> guard(g_threads_lock);
  const void** seen = g_threads[site];
  const int count = g_thread_count[site];
  if (std::find(seen, seen + count, thread) != seen + count) return;
  if (count < kMaxThreadsSeen) seen[g_thread_count[site]++] = thread;
}
std::atomic<uint32_t> g_highest_stack{0};

// Frames walked per site and module, in order of first sight; modules past
// the bound are counted together.
constexpr size_t kMaxWalkedModules = 24;
struct WalkedModule {
  std::string name;
  uint64_t frames[kCaptureSiteCount] = {};
};
SpinLock g_walked_lock;
std::vector<WalkedModule>* g_walked = new std::vector<WalkedModule>();  // never freed: read at exit

// Raises `value` to at least `candidate`; true when this call raised it.
template <typename T>
bool RaiseTo(std::atomic<T>& value, T candidate) {
  T seen = value.load(std::memory_order_relaxed);
  while (candidate > seen) {
    if (value.compare_exchange_weak(seen, candidate, std::memory_order_relaxed)) return true;
  }
  return false;
}

const char* SiteName(int site) {
  return site == static_cast<int>(CaptureSite::kOpEntry) ? "op_entry" : "inside_op";
}

}  // namespace

bool ReadCaptureStatsEnabled() {
  const char* value = std::getenv("DEEPCONTEXT_NATIVE_STATS");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

void RecordCapture(const CaptureSample& sample) {
  SiteCounters& site = g_sites[static_cast<int>(sample.site)];
  NoteThread(static_cast<int>(sample.site), sample.thread);
  constexpr auto relaxed = std::memory_order_relaxed;
  site.captures.fetch_add(1, relaxed);
  if (sample.anchored) site.anchored.fetch_add(1, relaxed);
  if (sample.met_previous) site.met_previous.fetch_add(1, relaxed);
  site.walked.fetch_add(static_cast<uint64_t>(sample.walked), relaxed);
  site.copied.fetch_add(static_cast<uint64_t>(sample.copied), relaxed);
  RaiseTo(site.max_walked, static_cast<uint64_t>(sample.walked));
  if (sample.stack != 0 && RaiseTo(g_highest_stack, sample.stack)) {
    site.new_stacks.fetch_add(1, relaxed);
  }
  site.unwind_ns.fetch_add(sample.unwind_ns, relaxed);
  site.total_ns.fetch_add(sample.total_ns, relaxed);
  g_time_buckets[static_cast<int>(sample.site)][TimeBucket(sample.total_ns)].fetch_add(1, relaxed);
  const int outcome = static_cast<int>(sample.outcome);
  site.outcomes[outcome].fetch_add(1, relaxed);
  site.outcome_ns[outcome].fetch_add(sample.total_ns, relaxed);
}

void RecordWalkedFrames(CaptureSite site, const std::string& module, int count) {
  if (count <= 0) return;
  // The file name alone: paths differ between machines, names do not. A
  // mapping of a file descriptor (libffi's trampolines, /proc/self/fd/N)
  // keeps its path: its name is a number.
  std::string name = module.starts_with("/proc/") ? module : BaseName(module);
  if (name.empty()) name = "(no module)";
  std::lock_guard<SpinLock> guard(g_walked_lock);
  std::vector<WalkedModule>& modules = *g_walked;
  const auto find = [&modules](const std::string& wanted) {
    return std::find_if(modules.begin(), modules.end(),
                        [&wanted](const WalkedModule& known) { return known.name == wanted; });
  };
  auto it = find(name);
  if (it == modules.end() && modules.size() >= kMaxWalkedModules) {
    name = "(other modules)";
    it = find(name);
  }
  if (it == modules.end()) it = modules.insert(modules.end(), WalkedModule{name, {}});
  it->frames[static_cast<int>(site)] += static_cast<uint64_t>(count);
}

// Frames walked per capture at `site`, by module, most first.
std::string WalkedByModule(int site, uint64_t captures) {
  std::vector<std::pair<uint64_t, std::string>> counts;
  {
    std::lock_guard<SpinLock> guard(g_walked_lock);
    for (const WalkedModule& module : *g_walked) {
      if (module.frames[site] != 0) counts.emplace_back(module.frames[site], module.name);
    }
  }
  if (counts.empty()) return {};
  std::sort(counts.begin(), counts.end(), std::greater<>());
  std::string text = ", frames walked by module";
  for (size_t i = 0; i < counts.size(); ++i) {
    char part[160];
    std::snprintf(part, sizeof(part), "%s%s %.2f", i == 0 ? ": " : ", ", counts[i].second.c_str(),
                  static_cast<double>(counts[i].first) / static_cast<double>(captures));
    text += part;
  }
  return text;
}

uint64_t StartPathCall() { return CaptureClockNs(); }

void EndPathCall(PathCall call, uint64_t start_ns) {
  RecordPathCall(call, CaptureClockNs() - start_ns);
}

void RecordTrailOutcome(TrailOutcome outcome) {
  g_trail_outcomes[static_cast<int>(outcome)].fetch_add(1, std::memory_order_relaxed);
}

void RecordPathCall(PathCall call, uint64_t ns) {
  PathCallCounters& counters = g_path_calls[static_cast<int>(call)];
  counters.calls.fetch_add(1, std::memory_order_relaxed);
  counters.ns.fetch_add(ns, std::memory_order_relaxed);
}

static int ThreadCount(int site) {
  std::lock_guard<SpinLock> guard(g_threads_lock);
  return g_thread_count[site];
}

constexpr const char* kPathCallNames[kPathCallCount] = {"op_enter", "context_query",
                                                         "frame_name"};

std::string CaptureStatsLine() {
  if (!CaptureStatsEnabled()) return {};
  std::string line;
  for (int c = 0; c < kPathCallCount; ++c) {
    const uint64_t calls = g_path_calls[c].calls.load();
    if (calls == 0) continue;
    const uint64_t ns = g_path_calls[c].ns.load();
    char text[160];
    std::snprintf(text, sizeof(text), "%s%s: %llu calls, %.3f ms (%.0f ns each)",
                  line.empty() ? "" : "; ", kPathCallNames[c],
                  static_cast<unsigned long long>(calls), static_cast<double>(ns) / 1e6,
                  static_cast<double>(ns) / calls);
    line += text;
  }
  for (int s = 0; s < kCaptureSiteCount; ++s) {
    const SiteCounters& site = g_sites[s];
    const uint64_t captures = site.captures.load();
    if (captures == 0) continue;
    auto per = [captures](uint64_t total) { return static_cast<double>(total) / captures; };
    auto ms = [](uint64_t ns) { return static_cast<double>(ns) / 1e6; };
    char text[512];
    std::snprintf(
        text, sizeof(text),
        "%s%s: %llu captures on %d threads (%llu anchored, %llu on the previous capture), "
        "frames walked %.1f (max %llu) copied %.1f "
        "per capture, %llu new stacks; unwind %.3f ms (%.0f ns each), total %.3f ms (%.0f ns each); "
        "reused %llu, cached %llu, new %llu (%.3f ms), no stack %llu",
        line.empty() ? "" : "; ", SiteName(s), static_cast<unsigned long long>(captures),
        ThreadCount(s), static_cast<unsigned long long>(site.anchored.load()),
        static_cast<unsigned long long>(site.met_previous.load()), per(site.walked.load()),
        static_cast<unsigned long long>(site.max_walked.load()), per(site.copied.load()),
        static_cast<unsigned long long>(site.new_stacks.load()),
        ms(site.unwind_ns.load()), per(site.unwind_ns.load()), ms(site.total_ns.load()),
        per(site.total_ns.load()),
        static_cast<unsigned long long>(site.outcomes[0].load()),
        static_cast<unsigned long long>(site.outcomes[1].load()),
        static_cast<unsigned long long>(site.outcomes[2].load()), ms(site.outcome_ns[2].load()),
        static_cast<unsigned long long>(site.outcomes[3].load()));
    line += text;
    line += ", by time (<0.25/1/4/16/64/256/more us)";
    for (int b = 0; b < kTimeBuckets; ++b) {
      line += b == 0 ? " " : "/";
      line += std::to_string(g_time_buckets[s][b].load());
    }
    line += WalkedByModule(s, captures);
  }
  uint64_t trails[kTrailOutcomeCount];
  for (int o = 0; o < kTrailOutcomeCount; ++o) trails[o] = g_trail_outcomes[o].load();
  uint64_t any_trail = 0;
  for (const uint64_t count : trails) any_trail += count;
  if (any_trail > 0) {
    // Why calls inside ops keep unwinding: their trails were not kept, or
    // not tried, or did not hold.
    line += line.empty() ? "" : "; ";
    // Which limit a trail too long reached says which one to raise.
    line += "inside-op trails: " + std::to_string(trails[0]) + " kept, " +
            std::to_string(trails[1] + trails[7]) + " too long (" + std::to_string(trails[1]) +
            " past " + std::to_string(StackTrail::kMaxSteps) + " steps, " +
            std::to_string(trails[7]) + " past " + std::to_string(StackTrail::kMaxWords) +
            " words), " + std::to_string(trails[2]) + " not recorded, " +
            std::to_string(trails[3]) + " not the unwound stack; " +
            "calls unwound: " + std::to_string(trails[4]) + " in an op not the latest captured, " +
            std::to_string(trails[5]) + " whose trails did not hold, " +
            std::to_string(trails[6]) + " of keys without one";
  }
  if (const int rules = CfiRuleCacheSize(); rules > 0) {
    // How much of the cfi-cache walks the threads' memos replayed (counts
    // flushed every few dozen walks of a thread).
    const internal::WalkMemoCounters memo = internal::WalkMemoTotals();
    line += "; walk memo: " + std::to_string(memo.segments) + " segments, " +
            std::to_string(memo.replayed) + " steps replayed, " + std::to_string(memo.stepped) +
            " stepped by rule";
    const CfiCacheCounters cfi = CfiRuleCacheCounters();
    line += "; cfi-cache: " + std::to_string(rules) + " rules, " +
            std::to_string(cfi.thread_fills) + " thread-cache misses, " +
            std::to_string(cfi.uncached_computes) + " rules computed uncached";
    char compute[128];
    std::snprintf(compute, sizeof(compute),
                  ", %.3f ms computing rules (%llu minor, %llu major page faults)",
                  static_cast<double>(cfi.compute_ns) / 1e6,
                  static_cast<unsigned long long>(cfi.minor_faults),
                  static_cast<unsigned long long>(cfi.major_faults));
    line += compute;
  }
  return line;
}

}  // namespace deepcontext::native

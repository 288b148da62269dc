#include "tools/report/report_header.h"

#include <charconv>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tools/report/value_format.h"

namespace deepcontext::report {

namespace {

bool ParseUint(const std::string& text, uint64_t& value) {
  const char* end = text.data() + text.size();
  auto [ptr, error] = std::from_chars(text.data(), end, value);
  return !text.empty() && error == std::errc() && ptr == end;
}

// "pid 1234, host gpu01, rank 0"; "" when none is known.
std::string ProcessText(const analysis::SourceInfo& source) {
  std::vector<std::string> parts;
  if (std::string pid = source.Metadata("pid"); !pid.empty()) {
    parts.push_back("pid " + pid);
  }
  if (std::string host = source.Metadata("host"); !host.empty()) {
    parts.push_back("host " + host);
  }
  if (std::string rank = source.Metadata("rank"); !rank.empty()) {
    parts.push_back("rank " + rank);
  }
  std::string text;
  for (const std::string& part : parts) {
    text += (text.empty() ? "" : ", ") + part;
  }
  return text;
}

// "python 3.11.2, torch 2.1.0"; "" when none is known.
std::string VersionsText(const analysis::SourceInfo& source) {
  std::string text;
  for (std::string_view framework : {"python", "torch", "jax", "cuda"}) {
    std::string version = source.Metadata(std::string(framework) + "_version");
    if (version.empty()) continue;
    text += (text.empty() ? "" : ", ") + std::string(framework) + " " + version;
  }
  return text;
}

std::string Line(std::string_view label, const std::string& value) {
  if (value.empty()) return "";
  std::string line(label);
  line.resize(11, ' ');
  return line + value + "\n";
}

// "(reserved peak 24.0 MiB; 8.00 MiB allocated before profiling)" for one
// device, from what its metadata holds; "" when it holds neither.
std::string DeviceMemoryDetails(const analysis::SourceInfo& source,
                                const std::string& prefix) {
  std::vector<std::string> parts;
  uint64_t bytes = 0;
  if (ParseUint(source.Metadata(prefix + "reserved_peak_bytes"), bytes)) {
    parts.push_back("reserved peak " +
                    FormatValue(static_cast<double>(bytes), "bytes"));
  }
  if (ParseUint(source.Metadata(prefix + "before_profiling_bytes"), bytes) &&
      bytes > 0) {
    parts.push_back(FormatValue(static_cast<double>(bytes), "bytes") +
                    " allocated before profiling");
  }
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? " (" : "; ") + part;
  return text.empty() ? text : text + ")";
}

// "peak 20.0 MiB on GPU 0 (reserved peak 24.0 MiB), 1.50 GiB on GPU 1";
// otherwise why GPU memory was not tracked, when GPU work was; "" for
// CPU-only runs. Reserved memory is shown beside the allocated peak because
// out-of-memory errors are about what the allocator reserved.
std::string MemoryText(const analysis::SourceInfo& source) {
  std::string peaks;
  for (int device = 0; device < 64; ++device) {
    const std::string prefix = "gpu" + std::to_string(device) + "_memory_";
    uint64_t bytes = 0;
    if (!ParseUint(source.Metadata(prefix + "peak_bytes"), bytes)) continue;
    peaks += (peaks.empty() ? "peak " : ", ") +
             FormatValue(static_cast<double>(bytes), "bytes") + " on GPU " +
             std::to_string(device) + DeviceMemoryDetails(source, prefix);
  }
  if (!peaks.empty()) {
    return peaks + " (--metric gpu_peak_live_bytes shows who held it)";
  }
  const std::string status = source.Metadata("gpu_memory");
  const bool gpu_used = !source.Metadata("gpu").empty() &&
                        source.Metadata("gpu").rfind("no GPU activity", 0) != 0;
  return gpu_used ? status : "";
}

std::string DurationText(const analysis::SourceInfo& source) {
  double duration = DurationNs(source);
  return duration < 0 ? "" : FormatValue(duration, "ns");
}

// Trace windows: the profile covers part of the run only.
std::string TracedText(const analysis::SourceInfo& source) {
  const std::string windows = source.Metadata("trace_windows");
  if (windows.empty() || windows.rfind("off", 0) == 0) return windows;
  return windows + "; the metrics cover these windows only";
}

uint64_t MetadataCount(const analysis::SourceInfo& source, const char* key) {
  uint64_t value = 0;
  return ParseUint(source.Metadata(key), value) ? value : 0;
}

// Kernel launches CUPTI gave no timestamps that --gpu-metrics does not
// explain (more than it measured, or none measured): "" when none.
std::string UnexplainedUntimedText(const analysis::SourceInfo& source) {
  const uint64_t untimed = MetadataCount(source, "gpu_untimed_kernel_records");
  const uint64_t measured = source.Metadata("gpu_metrics").starts_with("on")
                                ? MetadataCount(source, "gpu_metrics_measured")
                                : 0;
  if (untimed <= measured) return "";
  return std::to_string(untimed - measured) +
         " kernel launches came without a duration from CUPTI (not timed, or still "
         "running at a flush); they are left out of gpu_time and counted in "
         "gpu_untimed_launches";
}

// What went wrong with GPU collection: records lost to another client, GPU
// tracing that ended at a trace window, or kernels the tracer did not time.
std::string GpuWarningText(const analysis::SourceInfo& source) {
  std::string out = source.Metadata("gpu_warning");
  const std::string window_error = source.Metadata("gpu_window_error");
  if (!window_error.empty()) out += (out.empty() ? "" : "; ") + window_error;
  const std::string untimed = UnexplainedUntimedText(source);
  if (!untimed.empty()) out += (out.empty() ? "" : "; ") + untimed;
  return out;
}

// The GPU line. Without an NVIDIA driver the runtime's reason (a loader
// error) says nothing a CPU user needs: one short phrase instead. Other
// reasons (CUPTI missing, profiling refused) matter on GPU machines and are
// shown whole.
std::string GpuText(const analysis::SourceInfo& source) {
  constexpr std::string_view kNoActivity = "no GPU activity recorded: ";
  constexpr std::string_view kNoDriver = "no NVIDIA driver";
  const std::string status = source.Metadata("gpu");
  std::string_view reason = status;
  if (reason.starts_with(kNoActivity)) reason.remove_prefix(kNoActivity.size());
  if (reason.starts_with(kNoDriver)) return "none (no NVIDIA driver)";
  return status;
}

// One "Warning:" line per metadata entry whose key starts with "warning_"
// (what the launcher wants a reader to know, e.g. that the PyTorch adapter
// could not be built), then the GPU collection warnings. Profiles of one
// job usually carry the same warnings: each text is shown once.
std::string WarningLines(const std::vector<analysis::SourceInfo>& sources) {
  std::vector<std::string> texts;
  auto add = [&texts](const std::string& text) {
    if (text.empty()) return;
    for (const std::string& seen : texts) {
      if (seen == text) return;
    }
    texts.push_back(text);
  };
  for (const analysis::SourceInfo& source : sources) {
    for (const auto& [key, value] : source.metadata) {
      if (key.starts_with("warning_")) add(value);
    }
  }
  for (const analysis::SourceInfo& source : sources) {
    add(GpuWarningText(source));
  }
  std::string out;
  for (const std::string& text : texts) {
    // A multi-line text stays under its label.
    std::string indented;
    for (char c : text) {
      indented += c;
      if (c == '\n') indented += "           ";
    }
    while (!indented.empty() &&
           (indented.back() == ' ' || indented.back() == '\n')) {
      indented.pop_back();
    }
    out += Line("Warning:", indented);
  }
  return out;
}

}  // namespace

// What fine-grained collection ran and what it cost: instruction sampling
// serializes kernels, so their times and the GPU busy time are those of a
// serialized run.
std::string FineGrainedText(const analysis::SourceInfo& source) {
  std::string out;
  const std::string samples = source.Metadata("gpu_samples");
  if (samples.starts_with("on")) {
    out = "GPU instruction samples " + samples.substr(3);
    const std::string attributed = source.Metadata("gpu_samples_attributed");
    if (!attributed.empty()) out += ", " + attributed + " samples";
    out += "; kernels ran one at a time";
  }
  const std::string metrics = source.Metadata("gpu_metrics");
  if (metrics.starts_with("on")) {
    const std::string measured = source.Metadata("gpu_metrics_measured");
    const std::string bound = source.Metadata("gpu_metrics_launches_per_kernel");
    out += (out.empty() ? "" : "; ") + std::string("GPU hardware counters ") +
           metrics.substr(3) + ", " + (measured.empty() ? "0" : measured) +
           " launches measured (at most " + (bound.empty() ? "?" : bound) +
           " per kernel and calling context); measured launches ran serialized and "
           "replayed once per pass, and CUPTI gives them no time: gpu_time covers the "
           "launches not measured (gpu_untimed_launches counts the others)";
  }
  const std::string counters = source.Metadata("cpu_counters");
  if (!counters.empty() && counters != "off") {
    out += (out.empty() ? "" : "; ") + std::string("CPU counters ") + counters;
  }
  return out;
}

double DurationNs(const analysis::SourceInfo& source) {
  uint64_t start = 0;
  uint64_t end = 0;
  if (!ParseUint(source.Metadata("start_time_ns"), start) ||
      !ParseUint(source.Metadata("end_time_ns"), end) || end < start) {
    return -1;
  }
  return static_cast<double>(end - start);
}

std::string RenderSourceHeader(const analysis::ProfileTree& tree) {
  const std::vector<analysis::SourceInfo>& sources = tree.sources();
  if (sources.size() == 1) {
    const analysis::SourceInfo& source = sources[0];
    return Line("Profile:", source.path) +
           Line("Command:", source.Metadata("command_line")) +
           Line("Process:", ProcessText(source)) +
           Line("Duration:", DurationText(source)) +
           Line("Traced:", TracedText(source)) +
           Line("Versions:", VersionsText(source)) +
           Line("GPU:", GpuText(source)) +
           Line("Devices:", source.Metadata("gpu_devices")) +
           Line("Sampled:", FineGrainedText(source)) +
           WarningLines(sources) + Line("Memory:", MemoryText(source));
  }

  // Profiles of one job usually share the command; print it once then.
  std::string command =
      sources.empty() ? "" : sources[0].Metadata("command_line");
  bool same_command = true;
  for (const analysis::SourceInfo& source : sources) {
    same_command = same_command && source.Metadata("command_line") == command;
  }
  std::string out = Line("Profiles:", std::to_string(sources.size()));
  for (const analysis::SourceInfo& source : sources) {
    std::string details = ProcessText(source);
    if (std::string duration = DurationText(source); !duration.empty()) {
      details += (details.empty() ? "" : ", ") + duration;
    }
    if (std::string traced = source.Metadata("trace_windows");
        !traced.empty()) {
      details += (details.empty() ? "" : ", ") + traced;
    }
    if (!same_command && !source.Metadata("command_line").empty()) {
      details += (details.empty() ? "" : ", ") + std::string("command: ") +
                 source.Metadata("command_line");
    }
    std::string name = source.path.empty() ? "(in memory)" : source.path;
    out += "  " + name + (details.empty() ? "" : ": " + details) + "\n";
  }
  if (same_command) out += Line("Command:", command);
  if (!sources.empty()) {
    out += Line("Versions:", VersionsText(sources[0]));
    out += Line("GPU:", GpuText(sources[0]));
    out += Line("Devices:", sources[0].Metadata("gpu_devices"));
  }
  out += WarningLines(sources);
  return out;
}

}  // namespace deepcontext::report

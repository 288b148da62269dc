#include "runtime/cupti/pc_sampling.h"

#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string_view>

#include "runtime/cupti/cupti_loader.h"
#include "runtime/cupti/pc_sampling_functions.h"

namespace deepcontext::cupti {

std::unique_ptr<PcSampling> PcSampling::StartIfAsked(gpu::ContextSink& sink,
                                                     const CuptiLibrary& library) {
  const char* flag = std::getenv("DEEPCONTEXT_GPU_SAMPLES");
  if (flag == nullptr || std::strcmp(flag, "1") != 0) return nullptr;
  auto functions = std::make_unique<PcSamplingFunctions>();
  const Status resolved = ResolvePcSamplingFunctions(library.path(), functions.get());
  std::string warning;
  const PcSamplingOptions options = PcSamplingOptionsFromEnvironment(&warning);
  auto sampling = std::make_unique<PcSampling>(
      sink, resolved.ok() ? functions.get() : nullptr, options,
      resolved.ok() ? "" : "off: " + resolved.message(),
      [&library](int result) { return library.ResultString(result); });
  if (resolved.ok()) sampling->owned_functions_ = std::move(functions);
  sampling->warning_ = warning;
  sampling->cubin_dir_ = CubinDirectoryFromEnvironment();
  return sampling;
}

PcSampling::PcSampling(gpu::ContextSink& sink, const PcSamplingFunctions* functions,
                       PcSamplingOptions options, std::string status,
                       std::function<std::string(int)> result_text)
    : aggregator_(sink), status_(std::move(status)) {
  if (functions != nullptr) {
    source_map_ = std::make_unique<CubinSourceMap>(*functions);
    if (source_map_->available()) {
      CubinSourceMap* map = source_map_.get();
      aggregator_.SetSourceResolver([map](uint64_t crc, std::string_view function,
                                          uint64_t pc, std::string* file, uint32_t* line) {
        SourceLine found;
        if (!map->Lookup(crc, function, pc, &found)) return false;
        *file = found.file;
        *line = found.line;
        return true;
      });
    }
    session_ = std::make_unique<PcSamplingSession>(*functions, aggregator_, options,
                                                   std::move(result_text));
  }
}

PcSampling::~PcSampling() = default;

void PcSampling::OnKernelLaunch(uint32_t correlation_id, gpu::ContextId context,
                                std::string_view api_name, void* cuda_context) {
  if (session_ == nullptr) return;
  aggregator_.OnLaunch(correlation_id, context, api_name);
  session_->OnKernelLaunch(cuda_context);
}

void PcSampling::OnGraphLaunch(uint32_t correlation_id, gpu::ContextId context,
                               std::string_view api_name, void* cuda_context,
                               uint64_t exec) {
  if (session_ == nullptr) return;
  aggregator_.OnGraphLaunch(correlation_id, context, api_name,
                            graph_kernel_sites_.ForLaunch(exec));
  session_->OnKernelLaunch(cuda_context);
}

void PcSampling::OnModuleLoaded(const void* cubin, size_t size) {
  if (source_map_ != nullptr) source_map_->OnModuleLoaded(cubin, size);
}

void PcSampling::Drain() {
  if (session_ != nullptr) session_->Drain();
}

void PcSampling::Stop() {
  if (session_ != nullptr) session_->Stop();
}

std::string PcSampling::CubinDirectoryFromEnvironment() {
  std::string dir;
  if (const char* named = std::getenv("DEEPCONTEXT_CUBIN_DIR"); named != nullptr) {
    dir = named;
  } else if (const char* output = std::getenv("DEEPCONTEXT_OUTPUT");
             output != nullptr && *output != '\0') {
    dir = output;
    constexpr std::string_view kSuffix = ".dctx";
    if (dir.ends_with(kSuffix)) dir.resize(dir.size() - kSuffix.size());
    dir += ".cubins";
  }
  // Absolute, so that the profile names it whatever folder a tool runs in.
  if (!dir.empty() && dir.front() != '/') {
    // On the heap: the runtime keeps every frame under a page
    // (runtime/CMakeLists.txt).
    std::string cwd(PATH_MAX, '\0');
    if (getcwd(cwd.data(), cwd.size()) != nullptr) {
      cwd.resize(std::strlen(cwd.c_str()));
      dir = cwd + "/" + dir;
    }
  }
  return dir;
}

std::vector<std::pair<std::string, std::string>> PcSampling::Metadata() const {
  auto out = PcSamplingMetadata(aggregator_.Stats(),
                                session_ != nullptr ? session_->Status() : status_);
  if (source_map_ != nullptr) {
    out.emplace_back("gpu_samples_modules", std::to_string(source_map_->modules()));
    if (const uint64_t skipped = source_map_->modules_skipped(); skipped > 0) {
      out.emplace_back("gpu_samples_modules_unmapped", std::to_string(skipped));
    }
    const std::set<uint64_t> sampled = aggregator_.SampledCubins();
    if (!cubin_dir_.empty() && !sampled.empty()) {
      std::vector<std::string> written;
      const Status kept = source_map_->WriteCubins(cubin_dir_, sampled, &written);
      std::string names;
      for (const std::string& name : written) names += (names.empty() ? "" : " ") + name;
      if (!names.empty()) {
        out.emplace_back("gpu_samples_cubin_dir", cubin_dir_);
        out.emplace_back("gpu_samples_cubins", names);
      }
      if (!kept.ok()) {
        out.emplace_back("warning_gpu_samples_cubins",
                         "cubins of sampled kernels not kept (no SASS text): " + kept.message());
      }
    }
  }
  if (!warning_.empty()) out.emplace_back("warning_gpu_sample_period", warning_);
  return out;
}

}  // namespace deepcontext::cupti

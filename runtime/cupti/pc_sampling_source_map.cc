#include "runtime/cupti/pc_sampling_source_map.h"

#include <cstdlib>

#include "runtime/cupti/pc_sampling_functions.h"

namespace deepcontext::cupti {

CubinSourceMap::CubinSourceMap(const PcSamplingFunctions& functions) : f_(functions) {}

bool CubinSourceMap::available() const {
  return f_.get_cubin_crc != nullptr && f_.get_sass_to_source != nullptr;
}

void CubinSourceMap::OnModuleLoaded(const void* cubin, size_t size) {
  if (!available() || cubin == nullptr || size == 0) return;
  std::lock_guard<std::mutex> guard(mutex_);
  if (bytes_ + size > kMaxCubinBytes) {
    ++skipped_;
    return;
  }
  CUpti_GetCubinCrcParams params{};
  params.size = CUpti_GetCubinCrcParamsSize;
  params.cubinSize = size;
  params.cubin = cubin;
  if (f_.get_cubin_crc(&params) != CUPTI_SUCCESS) {
    ++skipped_;
    return;
  }
  auto [it, inserted] = cubins_.try_emplace(params.cubinCrc);
  if (!inserted) return;  // the same code loaded again
  const char* bytes = static_cast<const char*>(cubin);
  it->second.assign(bytes, bytes + size);
  bytes_ += size;
}

bool CubinSourceMap::Lookup(uint64_t crc, std::string_view function, uint64_t pc_offset,
                            SourceLine* line) {
  if (!available()) return false;
  std::lock_guard<std::mutex> guard(mutex_);
  auto key = std::make_tuple(crc, std::string(function), pc_offset);
  if (auto cached = cache_.find(key); cached != cache_.end()) {
    *line = cached->second;
    return line->line != 0;
  }
  SourceLine found;
  if (auto cubin = cubins_.find(crc); cubin != cubins_.end()) {
    const std::string name(function);
    CUpti_GetSassToSourceCorrelationParams params{};
    params.size = CUpti_GetSassToSourceCorrelationParamsSize;
    params.cubin = cubin->second.data();
    params.cubinSize = cubin->second.size();
    params.functionName = name.c_str();
    params.pcOffset = pc_offset;
    if (f_.get_sass_to_source(&params) == CUPTI_SUCCESS) {
      std::string dir = params.dirName != nullptr ? params.dirName : "";
      std::string file = params.fileName != nullptr ? params.fileName : "";
      if (!dir.empty() && !file.empty() && file.front() != '/') {
        file = dir + (dir.back() == '/' ? "" : "/") + file;
      }
      found = SourceLine{file, params.lineNumber};
      // CUPTI allocates both for the caller.
      std::free(params.fileName);
      std::free(params.dirName);
    }
  }
  cache_.emplace(std::move(key), found);
  *line = found;
  return found.line != 0;
}

uint64_t CubinSourceMap::modules() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return cubins_.size();
}

uint64_t CubinSourceMap::modules_skipped() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return skipped_;
}

}  // namespace deepcontext::cupti

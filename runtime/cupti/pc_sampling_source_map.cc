#include "runtime/cupti/pc_sampling_source_map.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

namespace {

// Writes `bytes` to `path` through a temporary file renamed over it, so
// that processes of one run sharing the folder never see half a cubin.
Status WriteFileAtomically(const std::string& path, const std::vector<char>& bytes) {
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (file == nullptr) return Status::Error(temporary + ": " + std::strerror(errno));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed || std::rename(temporary.c_str(), path.c_str()) != 0) {
    Status failed = Status::Error(path + ": " + std::strerror(errno));
    std::remove(temporary.c_str());
    return failed;
  }
  return Status::Ok();
}

}  // namespace

Status CubinSourceMap::WriteCubins(const std::string& dir, const std::set<uint64_t>& crcs,
                                   std::vector<std::string>* names) const {
  Status status;
  std::lock_guard<std::mutex> guard(mutex_);
  bool made = false;
  for (uint64_t crc : crcs) {
    const auto cubin = cubins_.find(crc);
    if (cubin == cubins_.end()) continue;  // loaded before the profile started
    if (!made) {
      if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        return Status::Error(dir + ": " + std::strerror(errno));
      }
      made = true;
    }
    char name[24];
    std::snprintf(name, sizeof(name), "%016llx", static_cast<unsigned long long>(crc));
    const std::string path = dir + "/" + name + ".cubin";
    struct stat existing {};
    const bool present = stat(path.c_str(), &existing) == 0 &&
                         static_cast<size_t>(existing.st_size) == cubin->second.size();
    if (!present) {
      if (Status written = WriteFileAtomically(path, cubin->second); !written.ok()) {
        status = std::move(written);
        continue;
      }
    }
    names->emplace_back(name);
  }
  return status;
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

#include "tools/sass/disassembler.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

namespace deepcontext::sass {
namespace {

std::string Getenv(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

bool IsExecutable(const std::string& path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0;
}

}  // namespace

NvdisasmSearch NvdisasmSearch::FromEnvironment() {
  NvdisasmSearch search;
  search.program = Getenv("DEEPCONTEXT_NVDISASM");
  search.cuda_home = Getenv("CUDA_HOME");
  search.path = Getenv("PATH");
  return search;
}

std::optional<std::string> FindNvdisasm(const NvdisasmSearch& search) {
  if (!search.program.empty()) {
    if (IsExecutable(search.program)) return search.program;
    return std::nullopt;
  }
  std::vector<std::string> dirs;
  if (!search.cuda_home.empty()) dirs.push_back(search.cuda_home + "/bin");
  if (!search.default_dir.empty()) dirs.push_back(search.default_dir);
  size_t start = 0;
  while (start <= search.path.size() && !search.path.empty()) {
    size_t end = search.path.find(':', start);
    if (end == std::string::npos) end = search.path.size();
    // An empty entry of $PATH is the current folder, which is not
    // searched here: a profile's folder should not choose the program.
    if (end > start) dirs.push_back(search.path.substr(start, end - start));
    start = end + 1;
  }
  for (const std::string& dir : dirs) {
    const std::string candidate = dir + "/nvdisasm";
    if (IsExecutable(candidate)) return candidate;
  }
  return std::nullopt;
}

std::string NvdisasmMissingNote() {
  return "SASS text of sampled instructions left out: nvdisasm not found in "
         "$CUDA_HOME/bin, /usr/local/cuda/bin or $PATH (it comes with the CUDA toolkit; "
         "install the toolkit or set CUDA_HOME to it)";
}

Disassembler::Disassembler(std::string nvdisasm, ProgramLimits limits, DiskCache disk_cache)
    : nvdisasm_(std::move(nvdisasm)), limits_(limits), disk_cache_(disk_cache) {}

StatusOr<std::string> Disassembler::ListingText(const std::string& path) {
  const std::string cached = path + ".sass";
  if (disk_cache_ == DiskCache::kBesideCubin) {
    std::ifstream in(cached, std::ios::binary);
    std::stringstream text;
    if (in && text << in.rdbuf() && !text.str().empty()) return text.str();
  }
  if (nvdisasm_.empty()) return Status::Error(NvdisasmMissingNote());
  ++runs_;
  // -c: code sections only; the cubin is an argument, never shell text.
  StatusOr<std::string> text = RunProgram({nvdisasm_, "-c", path}, limits_);
  if (text.ok() && disk_cache_ == DiskCache::kBesideCubin) {
    // Through a temporary file, so that a reader never sees half of it; a
    // folder that cannot be written only costs the next command a run.
    const std::string temporary = cached + ".tmp." + std::to_string(getpid());
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text.value();
    out.close();
    if (!out || std::rename(temporary.c_str(), cached.c_str()) != 0) {
      std::remove(temporary.c_str());
    }
  }
  return text;
}

StatusOr<const SassListing*> Disassembler::Listing(const std::string& path) {
  auto cached = cache_.find(path);
  if (cached == cache_.end()) {
    StatusOr<std::string> text = ListingText(path);
    StatusOr<std::unique_ptr<SassListing>> entry =
        text.ok() ? StatusOr<std::unique_ptr<SassListing>>(
                        std::make_unique<SassListing>(SassListing::Parse(text.value())))
                  : StatusOr<std::unique_ptr<SassListing>>(text.status());
    cached = cache_.emplace(path, std::move(entry)).first;
  }
  if (!cached->second.ok()) return cached->second.status();
  return static_cast<const SassListing*>(cached->second.value().get());
}

}  // namespace deepcontext::sass

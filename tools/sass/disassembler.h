// nvdisasm from the CUDA toolkit, found where the toolkit puts it and run
// once per cubin: its listings are kept for the life of the object, so a
// profile with many sampled instructions in one cubin disassembles it once.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "tools/sass/sass_listing.h"
#include "tools/sass/subprocess.h"

namespace deepcontext::sass {

// Where to look for nvdisasm: $DEEPCONTEXT_NVDISASM when set (that file
// only), else in this order $CUDA_HOME/bin, the toolkit's default folder,
// then each folder of $PATH.
struct NvdisasmSearch {
  std::string program;                          // "" when unset
  std::string cuda_home;                        // "" when unset
  std::string default_dir = "/usr/local/cuda/bin";
  std::string path;                             // $PATH; "" when unset

  // The search of this process's environment.
  static NvdisasmSearch FromEnvironment();
};

// The executable found, or nullopt.
std::optional<std::string> FindNvdisasm(const NvdisasmSearch& search);

// One line telling a user who lacks nvdisasm how to get it.
std::string NvdisasmMissingNote();

class Disassembler {
 public:
  // Whether a listing is also kept on disk beside its cubin, as
  // <cubin>.sass, for the next command: cubins kept by the runtime are
  // named by their CRC, so a listing there never goes stale.
  enum class DiskCache { kOff, kBesideCubin };

  // `nvdisasm`: the executable (FindNvdisasm); "" when there is none,
  // which answers from the disk cache only.
  explicit Disassembler(std::string nvdisasm, ProgramLimits limits = {},
                        DiskCache disk_cache = DiskCache::kOff);

  // The listing of the cubin at `path` (`nvdisasm -c <path>`, or its disk
  // cache), or the error of that run; both are kept, so each cubin runs
  // nvdisasm once.
  StatusOr<const SassListing*> Listing(const std::string& path);
  const std::string& nvdisasm() const { return nvdisasm_; }
  bool has_nvdisasm() const { return !nvdisasm_.empty(); }
  int runs() const { return runs_; }

 private:
  StatusOr<std::string> ListingText(const std::string& path);

  std::string nvdisasm_;
  ProgramLimits limits_;
  DiskCache disk_cache_;
  int runs_ = 0;
  std::map<std::string, StatusOr<std::unique_ptr<SassListing>>> cache_;
};

}  // namespace deepcontext::sass

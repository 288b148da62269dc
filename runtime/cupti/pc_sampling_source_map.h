// Source lines of sampled instructions: the cubins of the modules loaded
// while sampling are kept (keyed by the CRC CUPTI's PC records name them
// by, cuptiGetCubinCrc), and an instruction's offset is mapped to the file
// and line its code came from with cuptiGetSassToSourceCorrelation. Only
// cubins built with line information answer (nvcc -lineinfo, Triton);
// others leave the instruction without a line.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/status.h"

namespace deepcontext::cupti {

struct PcSamplingFunctions;  // pc_sampling_functions.h

struct SourceLine {
  std::string file;  // "dir/file" as the cubin's line table names it
  uint32_t line = 0;
};

class CubinSourceMap {
 public:
  // Cubins kept at most, in bytes: beyond it new modules are not mapped.
  static constexpr size_t kMaxCubinBytes = size_t{256} << 20;

  explicit CubinSourceMap(const PcSamplingFunctions& functions);
  // Whether the entry points exist (older libcupti: no lines).
  bool available() const;

  // A module loaded (resource callback); copies the cubin. [any thread]
  void OnModuleLoaded(const void* cubin, size_t size);
  // The line of `pc_offset` in `function` of the cubin with `crc`; false
  // when unknown. Answers are cached. [any thread]
  bool Lookup(uint64_t crc, std::string_view function, uint64_t pc_offset,
              SourceLine* line);

  // Writes the kept cubins with these CRCs into `dir` (created when
  // missing) as <crc as 16 hex digits>.cubin, for the offline SASS listing
  // (tools/sass); a file already there with the same size is kept. Adds
  // the names written or found, without ".cubin", to *names even when it
  // fails: one cubin that cannot be written does not hide the others, so
  // the profile lists those and warns with the error. [any thread]
  Status WriteCubins(const std::string& dir, const std::set<uint64_t>& crcs,
                     std::vector<std::string>* names) const;

  uint64_t modules() const;
  uint64_t modules_skipped() const;  // over kMaxCubinBytes or CRC failed

 private:
  const PcSamplingFunctions& f_;
  mutable std::mutex mutex_;
  std::map<uint64_t, std::vector<char>> cubins_;  // by CRC
  size_t bytes_ = 0;
  uint64_t skipped_ = 0;
  std::map<std::tuple<uint64_t, std::string, uint64_t>, SourceLine> cache_;
};

}  // namespace deepcontext::cupti

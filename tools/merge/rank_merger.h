// Streaming merge of the profiles of one distributed job: profiles are added
// one at a time (each can be freed right after), identical calling contexts
// are merged, and each context keeps its per-rank values so that the merged
// profile can hold their distribution (tools/merge/rank_columns.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "format/profile_data.h"
#include "common/status.h"

namespace deepcontext::merge {

class RankMerger {
 public:
  RankMerger();
  ~RankMerger();
  RankMerger(const RankMerger&) = delete;
  RankMerger& operator=(const RankMerger&) = delete;

  // Adds one process's profile; source names it in errors and metadata.
  // The rank number is the profile's `rank` metadata, or, when no input has
  // one, its position among the inputs. Profiles of one rank (a rank's
  // DataLoader workers carry its RANK too) add up to that rank's values.
  // Fails, changing nothing, for a profile that is itself a merged one,
  // whose rank is not a number, or that has a rank where the first input
  // had none (or the reverse).
  Status Add(const format::Profile& profile, const std::string& source);

  // Number of distinct ranks added so far.
  size_t rank_count() const;

  // Number of profiles added so far.
  size_t process_count() const;

  // Builds the merged profile. Memory held is that of the merged tree and
  // one double per rank and (context, metric) seen, never the inputs.
  format::Profile Finish();

 private:
  class State;
  std::unique_ptr<State> state_;
};

// Canonical name of a thread node for matching across processes: thread
// ids differ between ranks, so "thread 4242 (pt_main)" becomes
// "thread * (pt_main)" and "thread 4242" becomes "thread *".
std::string MergedThreadName(const std::string& name);

}  // namespace deepcontext::merge

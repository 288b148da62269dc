// How a merged multi-rank profile stores the distribution of each context's
// values across ranks (docs/FORMAT.md, "Merged profiles"): for every metric M
// of the ranks, three companion metrics hold one value per context.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace deepcontext::merge {

// Metadata key present (value: the number of ranks) only in merged profiles.
inline constexpr std::string_view kMergedRanksKey = "merged_ranks";
// Metadata key listing the merged ranks' numbers, comma-separated, ascending.
inline constexpr std::string_view kMergedRankListKey = "merged_rank_list";

// "<M>.ranks": count = ranks that have the context, sum = total over ranks,
// min / max = smallest / largest per-rank sum over all ranks (0 for a rank
// without the context).
inline constexpr std::string_view kRanksSuffix = ".ranks";
// "<M>.rank_median": one sample, the median of the per-rank sums.
inline constexpr std::string_view kMedianSuffix = ".rank_median";
// "<M>.slowest_rank": one sample, the number of the rank with the largest
// per-rank sum (the lowest such rank on ties).
inline constexpr std::string_view kSlowestSuffix = ".slowest_rank";

// Returns the metadata key naming the file rank r came from: "rank3_source".
std::string RankSourceKey(long long rank);

// True for the name of a companion metric ("wall_time.ranks", ...).
bool IsRankColumn(std::string_view metric_name);

}  // namespace deepcontext::merge

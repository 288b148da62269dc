#include "tools/merge/rank_columns.h"

namespace deepcontext::merge {

std::string RankSourceKey(long long rank) {
  return "rank" + std::to_string(rank) + "_source";
}

bool IsRankColumn(std::string_view metric_name) {
  for (std::string_view suffix : {kRanksSuffix, kMedianSuffix, kSlowestSuffix}) {
    if (metric_name.size() > suffix.size() && metric_name.ends_with(suffix)) {
      return true;
    }
  }
  return false;
}

}  // namespace deepcontext::merge

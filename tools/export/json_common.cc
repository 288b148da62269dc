#include "tools/export/json_common.h"

namespace deepcontext::exporter {

std::string DumpJson(const OrderedJson& value) {
  return value.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

OrderedJson SourcesJson(const analysis::ProfileTree& tree) {
  OrderedJson sources = OrderedJson::array();
  for (const analysis::SourceInfo& source : tree.sources()) {
    OrderedJson metadata = OrderedJson::object();
    for (const auto& [key, value] : source.metadata) metadata[key] = value;
    sources.push_back({{"path", source.path}, {"metadata", metadata}});
  }
  return sources;
}

OrderedJson MetricsJson(const analysis::ProfileTree& tree) {
  OrderedJson metrics = OrderedJson::array();
  for (const analysis::MetricInfo& metric : tree.metrics()) {
    metrics.push_back({{"name", metric.name},
                       {"unit", metric.unit},
                       {"description", metric.description}});
  }
  return metrics;
}

}  // namespace deepcontext::exporter

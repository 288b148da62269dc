#include "tools/export/pprof_export.h"

#include <zlib.h>

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "tools/analysis/metric_selection.h"
#include "tools/export/proto/profile.pb.h"
#include "tools/merge/rank_columns.h"

namespace deepcontext::exporter {

namespace {

using analysis::NodeIndex;
using analysis::ProfileTree;

// pprof's unit names for the units the profiler writes.
std::string PprofUnit(const std::string& unit) {
  if (unit == "ns") return "nanoseconds";
  if (unit == "us") return "microseconds";
  if (unit == "ms") return "milliseconds";
  if (unit == "s") return "seconds";
  return unit;
}

int64_t MetadataNumber(const ProfileTree& tree, const char* key) {
  if (tree.sources().empty()) return 0;
  const std::string text = tree.sources()[0].Metadata(key);
  int64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

// The string table: index 0 must be "".
class StringTable {
 public:
  explicit StringTable(perftools::profiles::Profile* profile) : profile_(profile) {
    Id("");
  }
  int64_t Id(const std::string& text) {
    auto [it, inserted] = ids_.try_emplace(text, profile_->string_table_size());
    if (inserted) profile_->add_string_table(text);
    return it->second;
  }

 private:
  perftools::profiles::Profile* profile_;
  std::unordered_map<std::string, int64_t> ids_;
};

std::string Gzip(const std::string& bytes) {
  z_stream stream{};
  // windowBits 15 + 16 writes a gzip header and trailer instead of zlib's.
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("cannot start gzip compression");
  }
  std::string out(deflateBound(&stream, bytes.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  if (status != Z_STREAM_END) throw std::runtime_error("gzip compression failed");
  return out;
}

}  // namespace

std::string RenderPprof(const ProfileTree& tree) {
  perftools::profiles::Profile profile;
  StringTable strings(&profile);

  std::vector<analysis::MetricIndex> metrics;
  for (analysis::MetricIndex m = 0; m < tree.metrics().size(); ++m) {
    if (merge::IsRankColumn(tree.metrics()[m].name)) continue;
    metrics.push_back(m);
    auto* type = profile.add_sample_type();
    type->set_type(strings.Id(tree.metrics()[m].name));
    type->set_unit(strings.Id(PprofUnit(tree.metrics()[m].unit)));
  }
  if (auto chosen = analysis::DefaultMetric(tree)) {
    profile.set_default_sample_type(strings.Id(tree.metrics()[*chosen].name));
  }

  // One location (and function) per distinct frame; ids start at 1.
  std::vector<uint64_t> location_of_frame(tree.frames().size(), 0);
  auto location = [&](NodeIndex node) {
    const analysis::FrameId frame_id = tree.node(node).frame;
    uint64_t& id = location_of_frame[frame_id];
    if (id != 0) return id;
    const analysis::Frame& frame = tree.frames()[frame_id];
    id = static_cast<uint64_t>(profile.location_size()) + 1;
    auto* function = profile.add_function();
    function->set_id(id);
    function->set_name(strings.Id(analysis::DisplayName(frame)));
    function->set_system_name(strings.Id(format::FrameKindName(frame.kind)));
    function->set_filename(strings.Id(frame.file));
    auto* loc = profile.add_location();
    loc->set_id(id);
    auto* line = loc->add_line();
    line->set_function_id(id);
    line->set_line(frame.line);
    return id;
  };

  for (NodeIndex node = 1; node < tree.size(); ++node) {
    bool any = false;
    for (analysis::MetricIndex m : metrics) {
      any = any || std::llround(tree.Exclusive(node, m)) != 0;
    }
    if (!any) continue;
    auto* sample = profile.add_sample();
    for (NodeIndex at = node; at != ProfileTree::kRootNode;
         at = tree.node(at).parent) {
      sample->add_location_id(location(at));
    }
    for (analysis::MetricIndex m : metrics) {
      sample->add_value(std::llround(tree.Exclusive(node, m)));
    }
  }

  profile.set_time_nanos(MetadataNumber(tree, "start_time_ns"));
  int64_t duration = MetadataNumber(tree, "duration_ns");
  if (duration == 0) {
    duration = MetadataNumber(tree, "end_time_ns") - profile.time_nanos();
  }
  profile.set_duration_nanos(duration > 0 ? duration : 0);
  if (!tree.sources().empty()) {
    const std::string command = tree.sources()[0].Metadata("command_line");
    if (!command.empty()) profile.add_comment(strings.Id(command));
  }
  std::string bytes;
  if (!profile.SerializeToString(&bytes)) {
    throw std::runtime_error("cannot encode the pprof profile");
  }
  return Gzip(bytes);
}

}  // namespace deepcontext::exporter

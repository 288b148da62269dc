#include "tools/export/export_formats.h"

#include "tools/export/folded_export.h"
#include "tools/export/hatchet_export.h"
#include "tools/export/html_export.h"
#include "tools/export/json_export.h"
#include "tools/export/pprof_export.h"
#include "tools/export/speedscope_export.h"
#include "tools/export/timeline_export.h"

namespace deepcontext::exporter {

const std::vector<ExportFormat>& ExportFormats() {
  static const std::vector<ExportFormat> formats = {
      {"json", "the whole tree with every metric (deepcontext-json schema)",
       &RenderJson},
      {"pprof", "gzipped profile.proto for pprof / go tool pprof",
       &RenderPprof},
      {"hatchet", "hatchet literal JSON (GraphFrame.from_literal, Thicket)",
       &RenderHatchet},
      // Listed so that asking for a timeline explains why a profile of
      // aggregates cannot give one (tools/export/timeline_export.h).
      {"perfetto", "Chrome trace / Perfetto JSON: needs timed events, which "
       "profiles of aggregates do not hold", nullptr, &WhyNoTimeline},
      {"html", "the viewer and the profile in one file that opens offline",
       &RenderHtml},
      {"speedscope", "speedscope.app's format, one profile per metric",
       &RenderSpeedscope},
      {"folded", "folded stacks of the default metric (flamegraph.pl, inferno)",
       &RenderFolded},
  };
  return formats;
}

const ExportFormat* FindExportFormat(std::string_view name) {
  for (const ExportFormat& format : ExportFormats()) {
    if (format.name == name) return &format;
  }
  return nullptr;
}

std::string ExportFormatNames() {
  std::string names;
  for (const ExportFormat& format : ExportFormats()) {
    if (!names.empty()) names += ", ";
    names += format.name;
  }
  return names;
}

}  // namespace deepcontext::exporter

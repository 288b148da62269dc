#include "tools/export/export_formats.h"

#include "tools/export/folded_export.h"
#include "tools/export/html_export.h"
#include "tools/export/json_export.h"
#include "tools/export/speedscope_export.h"

namespace deepcontext::exporter {

const std::vector<ExportFormat>& ExportFormats() {
  static const std::vector<ExportFormat> formats = {
      {"json", "the whole tree with every metric (deepcontext-json schema)",
       &RenderJson},
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

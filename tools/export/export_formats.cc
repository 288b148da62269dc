#include "tools/export/export_formats.h"

#include "tools/export/json_export.h"

namespace deepcontext::exporter {

const std::vector<ExportFormat>& ExportFormats() {
  static const std::vector<ExportFormat> formats = {
      {"json", "the whole tree with every metric (deepcontext-json schema)",
       &RenderJson},
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

// The export formats `deepcontext export --format` offers. Each format lives
// in its own file of this folder and is listed once in export_formats.cc.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::exporter {

// One output format: its command-line name and how a tree becomes bytes.
struct ExportFormat {
  std::string_view name;  // "json"
  std::string_view help;  // one line for --help
  // Returns the whole output for tree. May throw std::bad_alloc.
  std::string (*render)(const analysis::ProfileTree& tree);
  // When set and it returns a reason, tree cannot be written in this
  // format (e.g. a timeline format for a profile without a time axis).
  std::string (*unavailable)(const analysis::ProfileTree& tree) = nullptr;
};

// Every format, in the order help texts list them.
const std::vector<ExportFormat>& ExportFormats();

// Returns the format called name, or nullptr when there is none.
const ExportFormat* FindExportFormat(std::string_view name);

// Returns the format names joined for messages: "json, pprof".
std::string ExportFormatNames();

}  // namespace deepcontext::exporter

#include "tools/server/source_view.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "tools/analysis/flat_view.h"

namespace deepcontext::server {

namespace {

using Json = nlohmann::ordered_json;

// Reads a named file; the reason it could not be read otherwise.
StatusOr<std::string> ReadNamedFile(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return Error{ErrorCode::kNotFound,
                 "cannot read " + path + ": " + std::strerror(errno)};
  }
  if (!S_ISREG(info.st_mode)) {
    return Error{ErrorCode::kNotFound, path + " is not a regular file"};
  }
  if (static_cast<size_t>(info.st_size) > kMaxSourceBytes) {
    return Error{ErrorCode::kNotFound,
                 path + " is too large to show (" +
                     std::to_string(info.st_size) + " bytes)"};
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) {
    return Error{ErrorCode::kNotFound, "cannot read " + path};
  }
  return text.str();
}

Json LineMetrics(const analysis::ProfileTree& tree, const std::string& file) {
  struct LineValues {
    Json exclusive = Json::object();
    Json inclusive = Json::object();
  };
  std::map<uint32_t, LineValues> lines;
  for (analysis::MetricIndex m = 0; m < tree.metrics().size(); ++m) {
    const std::string& name = tree.metrics()[m].name;
    for (const analysis::FlatEntry& entry : analysis::Flat(tree, m, {})) {
      const analysis::Frame& frame = tree.frames()[entry.frame];
      if (frame.file != file || frame.line == 0) continue;
      LineValues& values = lines[frame.line];
      if (entry.exclusive != 0) {
        values.exclusive[name] =
            values.exclusive.value(name, 0.0) + entry.exclusive;
      }
      if (entry.inclusive != 0) {
        values.inclusive[name] =
            values.inclusive.value(name, 0.0) + entry.inclusive;
      }
    }
  }
  Json result = Json::array();
  for (auto& [line, values] : lines) {
    result.push_back({{"line", line},
                      {"exclusive", std::move(values.exclusive)},
                      {"inclusive", std::move(values.inclusive)}});
  }
  return result;
}

}  // namespace

StatusOr<std::string> RenderSourceView(const LoadedProfile& profile,
                                       const std::string& requested) {
  if (profile.source_files().count(requested) == 0) {
    return Error{ErrorCode::kNotFound,
                 "the profile names no file '" + requested + "'"};
  }
  Json doc = {{"file", requested}};
  StatusOr<std::string> text = ReadNamedFile(requested);
  if (text.ok()) {
    doc["text"] = text.value();
  } else {
    doc["text"] = nullptr;
    doc["error"] = text.error().message;
  }
  doc["lines"] = LineMetrics(profile.tree(), requested);
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace deepcontext::server

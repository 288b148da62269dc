#include "runtime/dlmonitor/python_frame_cache.h"

#include <string_view>

#include "deepcontext/dlmonitor.h"
#include "runtime/common/hot_path.h"

namespace deepcontext::dlmonitor {
namespace {

// "Class.method" and "outer.<locals>.inner" (3.11+ qualified names) match
// "method" and "inner"; an empty pattern matches every function.
bool FunctionMatches(std::string_view qualified, std::string_view pattern) {
  if (pattern.empty() || qualified == pattern) return true;
  return qualified.size() > pattern.size() &&
         qualified.ends_with(pattern) &&
         qualified[qualified.size() - pattern.size() - 1] == '.';
}

}  // namespace

ResolvedPythonFrame PythonFrameCache::Lookup(const python::RawFrame& frame) {
  Shard& shard = shards_[RawFrameHash{}(frame) % kShards];
  {
    std::lock_guard<std::mutex> guard(shard.mutex);
    auto it = shard.map.find(frame);
    if (it != shard.map.end()) return it->second;
  }
  // Resolve outside the shard lock: it interns strings under another mutex.
  ResolvedPythonFrame resolved = Resolve(frame);
  std::lock_guard<std::mutex> guard(shard.mutex);
  shard.map.emplace(frame, resolved);
  return resolved;
}

DEEPCONTEXT_HOT
ResolvedPythonFrame PythonFrameCache::Lookup(const python::RawFrame& frame,
                                             ThreadCache& local) {
  if (const ResolvedPythonFrame* cached = local.Find(frame)) return *cached;
  const ResolvedPythonFrame resolved = Lookup(frame);
  local.Put(frame, resolved);
  return resolved;
}

ResolvedPythonFrame PythonFrameCache::Resolve(const python::RawFrame& frame) {
  ResolvedPythonFrame out;
  out.key.kind = DLMONITOR_FRAME_PYTHON;
  python::FrameInfo info;
  if (!python::Resolve(frame, &info)) {
    out.key.name = strings_.Intern("<unknown python frame>");
    return out;
  }
  out.key.name = strings_.Intern(info.function);
  out.key.file = strings_.Intern(info.file);
  out.key.line = info.line > 0 ? static_cast<uint32_t>(info.line) : 0;
  std::lock_guard<std::mutex> guard(patterns_mutex_);
  for (const FramePattern& pattern : hidden_) {
    if (pattern.Matches(info)) {
      out.hidden = true;
      break;
    }
  }
  for (const FramePattern& pattern : compile_) {
    if (pattern.Matches(info)) {
      out.compile = true;
      break;
    }
  }
  return out;
}

bool PythonFrameCache::FramePattern::Matches(const python::FrameInfo& info) const {
  return info.file.find(file) != std::string::npos &&
         FunctionMatches(info.function, function);
}

void PythonFrameCache::MarkCompileFrames(const std::string& file_substring,
                                         const std::string& function) {
  if (file_substring.empty()) return;
  std::lock_guard<std::mutex> guard(patterns_mutex_);
  compile_.push_back(FramePattern{file_substring, function});
}

void PythonFrameCache::HideLeafFiles(const std::string& substring) {
  HideLeafFrames(substring, "");
}

void PythonFrameCache::HideLeafFrames(const std::string& file_substring,
                                      const std::string& function) {
  if (file_substring.empty()) return;
  std::lock_guard<std::mutex> guard(patterns_mutex_);
  hidden_.push_back(FramePattern{file_substring, function});
}

}  // namespace deepcontext::dlmonitor

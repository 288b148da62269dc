#include "runtime/dlmonitor/python_frame_cache.h"

#include "deepcontext/dlmonitor.h"

namespace deepcontext::dlmonitor {

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
  std::lock_guard<std::mutex> guard(hidden_mutex_);
  for (const std::string& pattern : hidden_) {
    if (info.file.find(pattern) != std::string::npos) {
      out.hidden = true;
      break;
    }
  }
  return out;
}

void PythonFrameCache::HideLeafFiles(const std::string& substring) {
  if (substring.empty()) return;
  std::lock_guard<std::mutex> guard(hidden_mutex_);
  hidden_.push_back(substring);
}

}  // namespace deepcontext::dlmonitor

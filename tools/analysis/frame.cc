#include "tools/analysis/frame.h"

#include <functional>

namespace deepcontext::analysis {

size_t FrameHash::operator()(const Frame& frame) const {
  // Boost-style combine: cheap, and good enough for the few distinct frames
  // a profile holds.
  size_t seed = std::hash<std::string>()(frame.name);
  auto combine = [&seed](size_t value) {
    seed ^= value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
  };
  combine(std::hash<std::string>()(frame.file));
  combine(std::hash<uint32_t>()(frame.line));
  combine(static_cast<size_t>(frame.kind));
  return seed;
}

std::string DisplayName(const Frame& frame) {
  using format::FrameKind;
  if (frame.name.empty()) {
    if (frame.kind == FrameKind::kRoot) return "<root>";
    return std::string("<") + format::FrameKindName(frame.kind) + ">";
  }
  switch (frame.kind) {
    case FrameKind::kThread:
      // The runtime names threads "main thread" and "thread <tid> (<name>)";
      // bare names ("main", a Python thread's name) get the word once.
      if (frame.name.starts_with("thread ") || frame.name.ends_with(" thread")) {
        return frame.name;
      }
      return "thread " + frame.name;
    case FrameKind::kPhase:
      // The runtime may or may not store the brackets; show them exactly once.
      if (frame.name.front() == '[' && frame.name.back() == ']') {
        return frame.name;
      }
      return "[" + frame.name + "]";
    default:
      return frame.name;
  }
}

bool IsStructuralKind(format::FrameKind kind) {
  using format::FrameKind;
  return kind == FrameKind::kRoot || kind == FrameKind::kProcess ||
         kind == FrameKind::kThread || kind == FrameKind::kPhase;
}

}  // namespace deepcontext::analysis

#include "runtime/xla/hlo_sources.h"

#include <cstdlib>
#include <map>
#include <set>

#include "runtime/xla/op_path.h"

namespace deepcontext::xla {
namespace {

enum class Section { kNone, kFileNames, kFunctionNames, kFileLocations, kStackFrames };

struct Location {
  uint64_t file = 0, function = 0;
  uint32_t line = 0;
};
struct Frame {
  uint64_t location = 0, parent = 0;
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

uint64_t Number(std::string_view s) {
  uint64_t value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') break;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value;
}

// The value of `key=` in a "{k=v k=v}" or "k=v, k=v" list, as a number.
uint64_t Field(std::string_view line, std::string_view key) {
  size_t at = 0;
  while ((at = line.find(key, at)) != std::string_view::npos) {
    const bool starts = at == 0 || line[at - 1] == ' ' || line[at - 1] == '{';
    if (starts && at + key.size() < line.size() && line[at + key.size()] == '=') {
      return Number(line.substr(at + key.size() + 1));
    }
    at += key.size();
  }
  return 0;
}

// `N "text"` -> N, text (HLO escapes quotes and backslashes).
bool NumberedString(std::string_view line, uint64_t* id, std::string* text) {
  const size_t quote = line.find('"');
  if (quote == std::string_view::npos || line.back() != '"' || quote + 1 >= line.size()) {
    return false;
  }
  *id = Number(line);
  text->clear();
  for (size_t i = quote + 1; i + 1 < line.size(); ++i) {
    if (line[i] == '\\' && i + 2 < line.size()) ++i;
    text->push_back(line[i]);
  }
  return *id != 0;
}

// The text of `key="..."` in a metadata list (HLO escapes quotes and
// backslashes); empty when absent.
std::string QuotedField(std::string_view line, std::string_view key) {
  size_t at = 0;
  while ((at = line.find(key, at)) != std::string_view::npos) {
    const bool starts = at == 0 || line[at - 1] == ' ' || line[at - 1] == '{';
    const size_t open = at + key.size();
    if (starts && open + 1 < line.size() && line[open] == '=' && line[open + 1] == '"') {
      std::string text;
      for (size_t i = open + 2; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '\\' && i + 1 < line.size()) ++i;
        text.push_back(line[i]);
      }
      return text;
    }
    at += key.size();
  }
  return {};
}

// The functions of the nested jits an operation was traced in: the
// "jit(name)" components of its name stack after the module's own.
std::set<std::string, std::less<>> NestedJits(std::string_view op_name) {
  std::set<std::string, std::less<>> names;
  const std::vector<std::string_view> parts = SplitNameStack(op_name);
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string_view part = parts[i];
    if (part.size() > 5 && part.substr(0, 4) == "jit(" && part.back() == ')') {
      names.emplace(part.substr(4, part.size() - 5));
    }
  }
  return names;
}

// Whether a frame's function is `name`: JAX records qualified names
// ("make_step.<locals>.step") where jit names the function itself ("step").
bool IsFunction(std::string_view qualified, std::string_view name) {
  if (name.empty() || qualified.size() < name.size()) return false;
  if (qualified == name) return true;
  return qualified.size() > name.size() &&
         qualified.substr(qualified.size() - name.size()) == name &&
         qualified[qualified.size() - name.size() - 1] == '.';
}

// "  %name = ..." or "  ROOT %name = ..." -> name.
std::string_view InstructionName(std::string_view line) {
  line = Trim(line);
  if (line.substr(0, 5) == "ROOT ") line.remove_prefix(5);
  if (!line.empty() && line.front() == '%') line.remove_prefix(1);
  const size_t eq = line.find(" = ");
  if (eq == std::string_view::npos || eq == 0) return {};
  const std::string_view name = line.substr(0, eq);
  return name.find(' ') == std::string_view::npos ? name : std::string_view{};
}

}  // namespace

HloSources ParseHloSources(std::string_view text) {
  HloSources out;
  std::map<uint64_t, std::string> files, functions;
  std::map<uint64_t, Location> locations;
  std::map<uint64_t, Frame> frames;
  struct Instruction {
    std::string name;
    uint64_t frame = 0;
    std::string op_name;
  };
  std::vector<Instruction> instructions;
  Section section = Section::kNone;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view raw = text.substr(start, end - start);
    const std::string_view line = Trim(raw);
    start = end + 1;
    if (out.module.empty() && line.substr(0, 10) == "HloModule ") {
      const std::string_view rest = line.substr(10);
      out.module.assign(rest.substr(0, rest.find_first_of(", ")));
      continue;
    }
    if (line.empty()) {
      section = Section::kNone;
      continue;
    }
    if (line == "FileNames") { section = Section::kFileNames; continue; }
    if (line == "FunctionNames") { section = Section::kFunctionNames; continue; }
    if (line == "FileLocations") { section = Section::kFileLocations; continue; }
    if (line == "StackFrames") { section = Section::kStackFrames; continue; }
    uint64_t id = 0;
    std::string value;
    switch (section) {
      case Section::kFileNames:
        if (NumberedString(line, &id, &value)) files[id] = value;
        continue;
      case Section::kFunctionNames:
        if (NumberedString(line, &id, &value)) functions[id] = value;
        continue;
      case Section::kFileLocations:
        locations[Number(line)] = {Field(line, "file_name_id"), Field(line, "function_name_id"),
                                   static_cast<uint32_t>(Field(line, "line"))};
        continue;
      case Section::kStackFrames: {
        const uint64_t printed_parent = Field(line, "parent_frame_id");
        frames[Number(line)] = {Field(line, "file_location_id"),
                                printed_parent > 0 ? printed_parent - 1 : 0};
        continue;
      }
      case Section::kNone:
        break;
    }
    const size_t metadata = line.find("metadata={");
    if (metadata == std::string_view::npos) continue;
    const std::string_view fields = line.substr(metadata + 9);
    const uint64_t frame = Field(fields, "stack_frame_id");
    const std::string_view name = InstructionName(raw);
    if (frame != 0 && !name.empty()) {
      instructions.push_back({std::string(name), frame, QuotedField(fields, "op_name")});
    }
  }
  const std::string jitted =
      out.module.substr(0, 4) == "jit_" ? out.module.substr(4) : out.module;
  for (const Instruction& instruction : instructions) {
    // Innermost first, up to and including the jitted function's frame.
    // An operation of a nested jit whose traceback does not reach it (JAX
    // reuses the inner function's trace from an earlier call, made from
    // elsewhere) goes up to the outermost nested jitted function instead:
    // the lines inside jitted code, never the earlier caller's.
    const auto nested = NestedJits(instruction.op_name);
    std::vector<SourceFrame> chain;
    std::set<uint64_t> seen;
    size_t keep = 0;
    for (uint64_t id = instruction.frame; id != 0 && seen.insert(id).second;) {
      auto frame = frames.find(id);
      if (frame == frames.end()) break;
      auto location = locations.find(frame->second.location);
      if (location == locations.end()) break;
      SourceFrame f;
      f.file = files[location->second.file];
      f.function = functions[location->second.function];
      f.line = location->second.line;
      chain.push_back(f);
      if (IsFunction(f.function, jitted)) {
        keep = chain.size();
        break;
      }
      for (const std::string& inner : nested) {
        if (IsFunction(f.function, inner)) keep = chain.size();
      }
      id = frame->second.parent;
    }
    if (keep == 0) continue;
    chain.resize(keep);
    out.frames.emplace(instruction.name, std::vector<SourceFrame>(chain.rbegin(), chain.rend()));
  }
  return out;
}

HloSourceRegistry& HloSourceRegistry::Global() {
  static HloSourceRegistry* const registry = new HloSourceRegistry;
  return *registry;
}

namespace {
bool SameFrames(const std::vector<SourceFrame>& a, const std::vector<SourceFrame>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].file != b[i].file || a[i].function != b[i].function || a[i].line != b[i].line) {
      return false;
    }
  }
  return true;
}
}  // namespace

void HloSourceRegistry::Add(HloSources sources) {
  if (sources.module.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  version_.fetch_add(1, std::memory_order_acq_rel);
  auto it = modules_.find(sources.module);
  if (it == modules_.end()) {
    modules_.emplace(sources.module, std::move(sources));
    return;
  }
  // Another compilation of the same name: an instruction whose frames
  // disagree cannot be told apart at run time (ranges name the module only).
  auto& known = it->second.frames;
  for (auto& [name, frames] : sources.frames) {
    auto old = known.find(name);
    if (old == known.end()) {
      known.emplace(name, std::move(frames));
    } else if (!SameFrames(old->second, frames)) {
      known.erase(old);
      conflicts_[sources.module].push_back(name);
    }
  }
  for (const std::string& name : conflicts_[sources.module]) known.erase(name);
}

std::vector<SourceFrame> HloSourceRegistry::Frames(std::string_view module,
                                                   std::string_view instruction) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = modules_.find(std::string(module));
  if (it == modules_.end()) return {};
  auto frame = it->second.frames.find(std::string(instruction));
  return frame == it->second.frames.end() ? std::vector<SourceFrame>{} : frame->second;
}

size_t HloSourceRegistry::modules() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return modules_.size();
}

}  // namespace deepcontext::xla

#include "tools/sass/instruction_sass.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <sstream>
#include <string_view>
#include <utility>

namespace deepcontext::sass {
namespace {

using format::FrameKind;
using format::NodeId;

constexpr std::string_view kPcPrefix = "pc 0x";
constexpr std::string_view kSassSeparator = ": ";

bool IsDirectory(const std::string& path) {
  struct stat info {};
  return !path.empty() && stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

std::string Basename(const std::string& path) {
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  const size_t slash = trimmed.rfind('/');
  return slash == std::string::npos ? trimmed : trimmed.substr(slash + 1);
}

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool ParseOffset(std::string_view name, uint64_t* offset) {
  if (!name.starts_with(kPcPrefix)) return false;
  name.remove_prefix(kPcPrefix.size());
  const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), *offset, 16);
  return error == std::errc() && end == name.data() + name.size();
}

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

}  // namespace

std::string CubinDirectory(const format::Profile& profile, const std::string& profile_path) {
  const std::string named = profile.Metadata("gpu_samples_cubin_dir");
  if (named.empty()) return "";
  if (IsDirectory(named)) return named;
  const std::string beside = Dirname(profile_path) + "/" + Basename(named);
  return IsDirectory(beside) ? beside : "";
}

SassAnnotation AnnotateInstructions(format::Profile& profile, const std::string& profile_path,
                                    Disassembler* disassembler) {
  SassAnnotation result;
  // Instruction nodes whose name is still the bare offset, by kernel name.
  std::vector<std::pair<NodeId, uint64_t>> pending;
  for (NodeId n = 1; n < profile.nodes.size(); ++n) {
    const format::Node& node = profile.nodes[n];
    if (node.kind != FrameKind::kGpuInstruction) continue;
    ++result.instructions;
    uint64_t offset = 0;
    if (profile.nodes[node.parent].kind != FrameKind::kGpuKernel ||
        !ParseOffset(profile.strings[node.name], &offset)) {
      continue;
    }
    pending.emplace_back(n, offset);
  }
  const std::vector<std::string> cubins = Words(profile.Metadata("gpu_samples_cubins"));
  if (pending.empty() || cubins.empty()) return result;
  const std::string dir = CubinDirectory(profile, profile_path);
  if (dir.empty()) {
    result.notes.push_back("SASS text of sampled instructions left out: the cubin folder " +
                           profile.Metadata("gpu_samples_cubin_dir") +
                           " is missing (keep it beside the profile)");
    return result;
  }
  if (disassembler == nullptr) {
    result.notes.push_back(NvdisasmMissingNote());
    return result;
  }
  std::vector<const SassListing*> listings;
  for (const std::string& crc : cubins) {
    auto listing = disassembler->Listing(dir + "/" + crc + ".cubin");
    if (!listing.ok()) {
      // Without nvdisasm, a cubin whose listing was not kept: one note for
      // all of them.
      std::string note = disassembler->has_nvdisasm()
                             ? "SASS text of cubin " + crc + " left out: " +
                                   listing.status().message()
                             : listing.status().message();
      if (std::find(result.notes.begin(), result.notes.end(), note) == result.notes.end()) {
        result.notes.push_back(std::move(note));
      }
      continue;
    }
    listings.push_back(listing.value());
  }
  std::map<std::string, format::StringId> added;
  for (const auto& [n, offset] : pending) {
    format::Node& node = profile.nodes[n];
    const std::string& function = profile.strings[profile.nodes[node.parent].name];
    // A kernel name in several cubins (a module loaded twice, or two
    // builds) is answered only when they agree at this offset.
    const std::string* text = nullptr;
    bool conflict = false;
    for (const SassListing* listing : listings) {
      const std::string* found = listing->Find(function, offset);
      if (found == nullptr) continue;
      if (text != nullptr && *text != *found) conflict = true;
      text = found;
    }
    if (text == nullptr || conflict) continue;
    const std::string label =
        profile.strings[node.name] + std::string(kSassSeparator) + *text;
    auto [it, inserted] = added.try_emplace(label, 0);
    if (inserted) {
      it->second = static_cast<format::StringId>(profile.strings.size());
      profile.strings.push_back(label);
    }
    node.name = it->second;
    ++result.annotated;
  }
  return result;
}

InstructionLabel SplitInstructionLabel(const std::string& name) {
  const size_t at = name.find(kSassSeparator);
  if (!name.starts_with(kPcPrefix) || at == std::string::npos) return {name, ""};
  return {name.substr(0, at), name.substr(at + kSassSeparator.size())};
}

}  // namespace deepcontext::sass

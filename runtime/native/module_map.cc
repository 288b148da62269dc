#include "runtime/native/module_map.h"

#include <limits.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace deepcontext::native {
namespace {

std::string ExecutablePath() {
  // On the heap: the runtime keeps every frame under a page
  // (runtime/CMakeLists.txt).
  std::string path(PATH_MAX, '\0');
  const ssize_t n = readlink("/proc/self/exe", path.data(), path.size());
  if (n <= 0) return "[executable]";
  path.resize(static_cast<size_t>(n));
  return path;
}

std::string Hex(const unsigned char* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    out.push_back(kDigits[bytes[i] >> 4]);
    out.push_back(kDigits[bytes[i] & 0xf]);
  }
  return out;
}

// The NT_GNU_BUILD_ID note of a PT_NOTE segment, if it holds one. Notes
// are 4-byte aligned records {namesz, descsz, type, name, desc}.
std::string BuildIdFromNotes(const unsigned char* notes, size_t size) {
  size_t pos = 0;
  auto align4 = [](size_t v) { return (v + 3) & ~size_t{3}; };
  while (pos + sizeof(ElfW(Nhdr)) <= size) {
    ElfW(Nhdr) header;
    std::memcpy(&header, notes + pos, sizeof(header));
    const size_t name_at = pos + sizeof(header);
    const size_t desc_at = name_at + align4(header.n_namesz);
    const size_t next = desc_at + align4(header.n_descsz);
    if (next > size || next <= pos) break;
    if (header.n_type == NT_GNU_BUILD_ID && header.n_namesz == 4 &&
        std::memcmp(notes + name_at, "GNU", 4) == 0) {
      return Hex(notes + desc_at, header.n_descsz);
    }
    pos = next;
  }
  return "";
}

int AddModule(dl_phdr_info* info, size_t /*size*/, void* data) {
  auto* modules = static_cast<std::vector<Module>*>(data);
  Module module;
  module.bias = info->dlpi_addr;
  bool any_load = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& phdr = info->dlpi_phdr[i];
    if (phdr.p_type == PT_LOAD) {
      const uintptr_t start = info->dlpi_addr + phdr.p_vaddr;
      const uintptr_t end = start + phdr.p_memsz;
      module.start = any_load ? std::min(module.start, start) : start;
      module.end = any_load ? std::max(module.end, end) : end;
      any_load = true;
    } else if (phdr.p_type == PT_NOTE && module.build_id.empty()) {
      module.build_id = BuildIdFromNotes(
          reinterpret_cast<const unsigned char*>(info->dlpi_addr +
                                                 phdr.p_vaddr),
          phdr.p_filesz);
    }
  }
  if (!any_load) return 0;
  const char* name = info->dlpi_name;
  // The main program is reported first with an empty name.
  module.path = (name == nullptr || name[0] == '\0') && modules->empty()
                    ? ExecutablePath()
                    : std::string(name == nullptr ? "" : name);
  if (module.path.empty()) module.path = "[anonymous]";
  modules->push_back(std::move(module));
  return 0;
}

}  // namespace

ModuleMap ModuleMap::Snapshot() {
  std::vector<Module> modules;
  dl_iterate_phdr(AddModule, &modules);
  return ModuleMap(std::move(modules));
}

ModuleMap::ModuleMap(std::vector<Module> modules)
    : modules_(std::move(modules)) {
  std::sort(modules_.begin(), modules_.end(),
            [](const Module& a, const Module& b) { return a.start < b.start; });
}

const Module* ModuleMap::Find(uintptr_t address) const {
  auto it = std::upper_bound(
      modules_.begin(), modules_.end(), address,
      [](uintptr_t a, const Module& m) { return a < m.start; });
  if (it == modules_.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

namespace {

struct LoaderCounts {
  uint64_t adds = 0;
  uint64_t subs = 0;
};

int ReadLoaderCounts(struct dl_phdr_info* info, size_t size, void* data) {
  // dlpi_adds / dlpi_subs exist since glibc 2.4; older ones pass a smaller
  // size.
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) +
                  sizeof(info->dlpi_subs)) {
    auto* counts = static_cast<LoaderCounts*>(data);
    counts->adds = static_cast<uint64_t>(info->dlpi_adds);
    counts->subs = static_cast<uint64_t>(info->dlpi_subs);
  }
  return 1;  // the counters are process-wide: the first module is enough
}

LoaderCounts ReadCounts() {
  LoaderCounts counts;
  dl_iterate_phdr(ReadLoaderCounts, &counts);
  return counts;
}

}  // namespace

uint64_t LoaderGeneration() {
  const LoaderCounts counts = ReadCounts();
  return counts.adds * 0x100000001ull + counts.subs;
}

uint64_t LoaderUnloads() { return ReadCounts().subs; }

}  // namespace deepcontext::native

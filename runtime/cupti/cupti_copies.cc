#include "runtime/cupti/cupti_copies.h"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace deepcontext::cupti {
namespace {

std::string RealPath(const char* path) {
  if (path == nullptr || *path == '\0') return "";
  std::unique_ptr<char, decltype(&free)> resolved(realpath(path, nullptr), &free);
  return resolved != nullptr ? std::string(resolved.get()) : std::string(path);
}

bool IsCuptiFileName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  const char* name = slash != nullptr ? slash + 1 : path;
  return std::strncmp(name, "libcupti.so", sizeof("libcupti.so") - 1) == 0;
}

}  // namespace

std::vector<std::string> LoadedCuptiCopies() {
  std::vector<std::string> copies;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name != nullptr && IsCuptiFileName(info->dlpi_name)) {
          static_cast<std::vector<std::string>*>(out)->push_back(RealPath(info->dlpi_name));
        }
        return 0;
      },
      &copies);
  std::sort(copies.begin(), copies.end());
  copies.erase(std::unique(copies.begin(), copies.end()), copies.end());
  return copies;
}

std::string LibraryHolding(const void* address) {
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0) return "";
  return RealPath(info.dli_fname);
}

std::vector<std::string> OtherCuptiCopies(const std::vector<std::string>& loaded,
                                          const std::string& ours) {
  std::vector<std::string> others;
  if (ours.empty()) return others;  // which copy is ours is unknown: name none
  for (const std::string& copy : loaded) {
    if (copy != ours) others.push_back(copy);
  }
  return others;
}

std::string OtherCopiesNote(const std::vector<std::string>& others) {
  if (others.empty()) return "";
  std::string note = "; another copy of CUPTI is loaded (";
  for (size_t i = 0; i < others.size(); ++i) {
    note += (i == 0 ? "" : ", ") + others[i];
  }
  note += "): a tool using it, such as Triton's Proton, holds the GPU until it "
          "ends, and one copy traces at a time";
  return note;
}

}  // namespace deepcontext::cupti

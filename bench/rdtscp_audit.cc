// An rtld-audit module (LD_AUDIT) that lets valgrind run libraries which
// execute RDTSCP on CPUs that do not advertise it.
//
// Some virtual machines hide RDTSCP from CPUID while the processor still
// executes it. Valgrind decodes the instruction only when CPUID advertises
// it, so a program loading such a library dies of SIGILL under valgrind:
// Debian's torch pulls in libhwy (through OpenCV, FFmpeg and libjxl), whose
// static initializer reads the time stamp counter with RDTSCP, and
// bench/op_path_callgrind.py could not run there. This module rewrites
// each RDTSCP (0f 01 f9) in the executable segments of the libraries named
// in $DEEPCONTEXT_RDTSCP_PATCH (comma-separated parts of file names;
// default "libhwy.so") into RDTSC; NOP (0f 31 90) as they are mapped,
// before their initializers run. Those libraries then read the counter
// without the processor id RDTSCP also returns in ECX, which timers ignore.
//
// It scans bytes, not instructions: in Debian 12's libhwy 1.0.3 each of the
// seven occurrences of those bytes is an RDTSCP (objdump -d). Name only
// libraries checked the same way.
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {

constexpr char kDefaultLibraries[] = "libhwy.so";

// Whether `path` contains one of the comma-separated `parts`.
bool Named(std::string_view path, std::string_view parts) {
  while (!parts.empty()) {
    const size_t comma = parts.find(',');
    const std::string_view part = parts.substr(0, comma);
    if (!part.empty() && path.find(part) != std::string_view::npos) return true;
    if (comma == std::string_view::npos) break;
    parts.remove_prefix(comma + 1);
  }
  return false;
}

// Rewrites the RDTSCPs of one executable segment; false when it could not
// be made writable.
bool PatchSegment(unsigned char* start, size_t length) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t low = reinterpret_cast<uintptr_t>(start) & ~(page - 1);
  const size_t span = reinterpret_cast<uintptr_t>(start) + length - low;
  void* pages = reinterpret_cast<void*>(low);
  if (mprotect(pages, span, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return false;
  for (size_t i = 0; i + 3 <= length; ++i) {
    if (start[i] == 0x0f && start[i + 1] == 0x01 && start[i + 2] == 0xf9) {
      start[i + 1] = 0x31;  // 0f 31: RDTSC
      start[i + 2] = 0x90;  // NOP
    }
  }
  return mprotect(pages, span, PROT_READ | PROT_EXEC) == 0;
}

// An object as mapped: its ELF header at the load address (l_addr, for a
// shared library whose first segment starts at address 0).
void Patch(const link_map& object) {
  const auto* header = reinterpret_cast<const ElfW(Ehdr)*>(object.l_addr);
  if (std::memcmp(header->e_ident, ELFMAG, SELFMAG) != 0) return;
  const auto* segments = reinterpret_cast<const ElfW(Phdr)*>(object.l_addr + header->e_phoff);
  for (int i = 0; i < header->e_phnum; ++i) {
    const ElfW(Phdr)& segment = segments[i];
    if (segment.p_type != PT_LOAD || (segment.p_flags & PF_X) == 0) continue;
    PatchSegment(reinterpret_cast<unsigned char*>(object.l_addr + segment.p_vaddr),
                 segment.p_filesz);
  }
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) unsigned int la_version(unsigned int version) {
  return version;
}

// Called once an object is mapped, before it is relocated and initialized.
__attribute__((visibility("default"))) unsigned int la_objopen(link_map* object, Lmid_t,
                                                               uintptr_t*) {
  const char* libraries = std::getenv("DEEPCONTEXT_RDTSCP_PATCH");
  if (libraries == nullptr || libraries[0] == '\0') libraries = kDefaultLibraries;
  // The main program and the loader have no name or one that is never a
  // library's to patch.
  if (object->l_name != nullptr && object->l_name[0] != '\0' &&
      Named(object->l_name, libraries)) {
    Patch(*object);
  }
  return 0;  // not asking for symbol binding callbacks
}

}  // extern "C"

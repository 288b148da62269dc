#include "runtime/native/symbolizer.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#if defined(DEEPCONTEXT_HAVE_LIBDW)
#include <elfutils/libdwfl.h>
#endif

namespace deepcontext::native {
namespace {

std::string HexOffset(uintptr_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "0x%" PRIxPTR, value);
  return buffer;
}

// A symbol names the pc only when the pc lies inside it; a nearest
// preceding symbol without a size could be any unrelated function.
bool Covers(uintptr_t symbol_offset, uint64_t symbol_size) {
  return symbol_size > 0 ? symbol_offset < symbol_size : symbol_offset == 0;
}

// dladdr back end: the dynamic symbol table of the module only.
bool LookupDynamicSymbol(uintptr_t address, std::string* function) {
  Dl_info info;
  ElfW(Sym)* symbol = nullptr;
  if (dladdr1(reinterpret_cast<void*>(address), &info,
              reinterpret_cast<void**>(&symbol), RTLD_DL_SYMENT) == 0) {
    return false;
  }
  if (info.dli_sname == nullptr || info.dli_saddr == nullptr ||
      symbol == nullptr) {
    return false;
  }
  const uintptr_t offset = address - reinterpret_cast<uintptr_t>(info.dli_saddr);
  if (!Covers(offset, symbol->st_size)) return false;
  *function = Demangle(info.dli_sname);
  return true;
}

}  // namespace

std::string Demangle(const char* name) {
  if (name == nullptr) return "";
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) {
    std::free(demangled);
    return name;
  }
  std::string result(demangled);
  std::free(demangled);
  return result;
}

std::string SymbolizedFrame::DisplayName() const {
  if (!function.empty()) return function;
  if (!module.empty()) return BaseName(module) + "+" + HexOffset(module_offset);
  return HexOffset(module_offset);
}

#if defined(DEEPCONTEXT_HAVE_LIBDW)

// A libdwfl session over the modules of the snapshot. Modules are reported
// from the snapshot (not from /proc/self/maps at symbolization time), so
// libraries unloaded since the capture are still found by path.
class Symbolizer::DebugInfo {
 public:
  explicit DebugInfo(const ModuleMap& modules) {
    callbacks_.find_elf = dwfl_build_id_find_elf;
    callbacks_.find_debuginfo = dwfl_standard_find_debuginfo;
    callbacks_.section_address = dwfl_offline_section_address;
    callbacks_.debuginfo_path = nullptr;
    dwfl_ = dwfl_begin(&callbacks_);
    if (dwfl_ == nullptr) return;
    dwfl_report_begin(dwfl_);
    for (const Module& module : modules.modules()) {
      // The vDSO and anonymous objects have no file to read.
      if (module.path.empty() || module.path[0] != '/') continue;
      dwfl_report_elf(dwfl_, module.path.c_str(), module.path.c_str(), -1,
                      module.bias, /*add_p_vaddr=*/true);
    }
    dwfl_report_end(dwfl_, nullptr, nullptr);
  }
  ~DebugInfo() {
    if (dwfl_ != nullptr) dwfl_end(dwfl_);
  }
  DebugInfo(const DebugInfo&) = delete;
  DebugInfo& operator=(const DebugInfo&) = delete;

  bool ok() const { return dwfl_ != nullptr; }

  // Fills function / file / line; false when no symbol covers `address`.
  bool Lookup(uintptr_t address, SymbolizedFrame* frame) const {
    Dwfl_Module* module = dwfl_addrmodule(dwfl_, address);
    if (module == nullptr) return false;
    GElf_Off offset = 0;
    GElf_Sym symbol;
    const char* name = dwfl_module_addrinfo(module, address, &offset, &symbol,
                                            nullptr, nullptr, nullptr);
    if (name == nullptr || !Covers(offset, symbol.st_size)) return false;
    // Dynamic symbols come with their version ("memcpy@@GLIBC_2.14"); the
    // version says nothing about the code and splits equal functions.
    const std::string_view plain(name, std::strcspn(name, "@"));
    frame->function = Demangle(std::string(plain).c_str());
    if (Dwfl_Line* line = dwfl_module_getsrc(module, address)) {
      int line_number = 0;
      const char* file =
          dwfl_lineinfo(line, nullptr, &line_number, nullptr, nullptr, nullptr);
      if (file != nullptr) {
        frame->file = file;
        frame->line = line_number;
      }
    }
    return true;
  }

 private:
  Dwfl_Callbacks callbacks_{};
  Dwfl* dwfl_ = nullptr;
};

#else

// Placeholder so that std::unique_ptr<DebugInfo> has a complete type.
class Symbolizer::DebugInfo {
 public:
  explicit DebugInfo(const ModuleMap& /*modules*/) {}
  bool ok() const { return false; }
  bool Lookup(uintptr_t /*address*/, SymbolizedFrame* /*frame*/) const {
    return false;
  }
};

#endif

Symbolizer::Symbolizer(ModuleMap modules)
    : Symbolizer(std::move(modules), Options{}) {}

Symbolizer::Symbolizer(ModuleMap modules, Options options)
    : modules_(std::move(modules)) {
#if defined(DEEPCONTEXT_HAVE_LIBDW)
  if (options.use_debug_info) {
    debug_info_ = std::make_unique<DebugInfo>(modules_);
    if (!debug_info_->ok()) debug_info_.reset();
  }
#else
  (void)options;
#endif
}

Symbolizer::~Symbolizer() = default;

const char* Symbolizer::BackendName() const {
  return debug_info_ != nullptr ? "libdw" : "dladdr";
}

const SymbolizedFrame& Symbolizer::Symbolize(uintptr_t pc) {
  auto it = cache_.find(pc);
  if (it != cache_.end()) return it->second;
  return cache_.emplace(pc, Lookup(pc)).first->second;
}

SymbolizedFrame Symbolizer::Lookup(uintptr_t pc) const {
  SymbolizedFrame frame;
  const Module* module = modules_.Find(pc);
  if (module != nullptr) {
    frame.module = module->path;
    frame.module_offset = pc - module->bias;
  } else {
    frame.module_offset = pc;
  }
  if (pc == 0) return frame;
  const uintptr_t call_site = pc - 1;
  if (debug_info_ != nullptr && debug_info_->Lookup(call_site, &frame)) {
    return frame;
  }
  // dladdr sees the libraries loaded now; a pc of a module that was in the
  // snapshot but has been unloaded (and maybe replaced) would be
  // misattributed, so only ask when the object dladdr finds starts where the
  // snapshot's module starts.
  if (module != nullptr && modules_.Find(call_site) == module) {
    static const uintptr_t page_mask =
        ~(static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)) - 1);
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(call_site), &info) != 0 &&
        reinterpret_cast<uintptr_t>(info.dli_fbase) ==
            (module->start & page_mask)) {
      LookupDynamicSymbol(call_site, &frame.function);
    }
  }
  return frame;
}

}  // namespace deepcontext::native

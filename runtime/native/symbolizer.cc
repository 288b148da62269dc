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

#include <set>
#include <unordered_map>

#include "runtime/native/dwfl_symbol_index.h"
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
[[maybe_unused]] bool Covers(uintptr_t symbol_offset, uint64_t symbol_size) {
  return symbol_size > 0 ? symbol_offset < symbol_size : symbol_offset == 0;
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

// A libdwfl session over the modules of a snapshot. Modules are reported
// from the snapshot (not from /proc/self/maps at symbolization time), so
// libraries unloaded since the capture are still found by path. Each is
// reported when a lookup first lands in it: reporting one opens and maps
// its file and looks for its separate debug info, and a torch process has
// hundreds of modules of which a run's paths meet a handful (reporting all
// of them took about 40 ms of the CPU training loop's first --native step).
// A later snapshot of a process that unloaded nothing goes on with the same
// session (Symbolizer::AdoptFrom): the modules read and the symbol indexes
// built so far stay.
class Symbolizer::DebugInfo {
 public:
  explicit DebugInfo(bool index_symbols) : index_symbols_(index_symbols) {
    callbacks_.find_elf = dwfl_build_id_find_elf;
    callbacks_.find_debuginfo = dwfl_standard_find_debuginfo;
    callbacks_.section_address = dwfl_offline_section_address;
    callbacks_.debuginfo_path = nullptr;
    dwfl_ = dwfl_begin(&callbacks_);
  }

  // Modules reported to libdwfl so far.
  size_t reported() const { return reported_.size(); }

  ~DebugInfo() {
    if (dwfl_ != nullptr) dwfl_end(dwfl_);
  }
  DebugInfo(const DebugInfo&) = delete;
  DebugInfo& operator=(const DebugInfo&) = delete;

  bool ok() const { return dwfl_ != nullptr; }

  // Fills function / file / line; false when no symbol covers `address`,
  // which lies in `in` (the snapshot's module there, or nullptr).
  bool Lookup(uintptr_t address, const Module* in, SymbolizedFrame* frame) {
    if (in == nullptr || !Report(*in)) return false;
    Dwfl_Module* module = dwfl_addrmodule(dwfl_, address);
    if (module == nullptr) return false;
    const char* name = SymbolName(module, address);
    if (name == nullptr) return false;
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
  // Reports `module` unless it was; false when it has no file to read
  // (the vDSO, anonymous objects).
  bool Report(const Module& module) {
    if (dwfl_ == nullptr || module.path.empty() || module.path[0] != '/') return false;
    if (!reported_.emplace(module.bias, module.path).second) return true;
    if (reported_.size() == 1) {
      dwfl_report_begin(dwfl_);
    } else {
      dwfl_report_begin_add(dwfl_);
    }
    dwfl_report_elf(dwfl_, module.path.c_str(), module.path.c_str(), -1, module.bias,
                    /*add_p_vaddr=*/true);
    dwfl_report_end(dwfl_, nullptr, nullptr);
    return true;
  }

  // The name of the symbol covering `address` (see Covers), or nullptr.
  const char* SymbolName(Dwfl_Module* module, uintptr_t address) {
    if (index_symbols_) {
      auto it = indexes_.find(module);
      if (it == indexes_.end()) {
        it = indexes_.emplace(module, std::make_unique<DwflSymbolIndex>(module)).first;
      }
      DwflSymbolIndex::Symbol symbol;
      switch (it->second->Find(address, &symbol)) {
        case DwflSymbolIndex::Answer::kSized:
          return symbol.name;
        case DwflSymbolIndex::Answer::kNone:
          return nullptr;
        case DwflSymbolIndex::Answer::kAskLibdw:
          break;
      }
    }
    GElf_Off offset = 0;
    GElf_Sym symbol;
    const char* name = dwfl_module_addrinfo(module, address, &offset, &symbol,
                                            nullptr, nullptr, nullptr);
    return name != nullptr && Covers(offset, symbol.st_size) ? name : nullptr;
  }

  Dwfl_Callbacks callbacks_{};
  Dwfl* dwfl_ = nullptr;
  const bool index_symbols_;
  std::set<std::pair<uintptr_t, std::string>> reported_;  // (bias, path)
  // Per module, made on its first lookup (a table read and a sort).
  std::unordered_map<Dwfl_Module*, std::unique_ptr<DwflSymbolIndex>> indexes_;
};

#else

// Placeholder so that std::unique_ptr<DebugInfo> has a complete type.
class Symbolizer::DebugInfo {
 public:
  explicit DebugInfo(bool /*index_symbols*/) {}
  size_t reported() const { return 0; }
  bool ok() const { return false; }
  bool Lookup(uintptr_t /*address*/, const Module* /*in*/, SymbolizedFrame* /*frame*/) const {
    return false;
  }
};

#endif

Symbolizer::Symbolizer(ModuleMap modules)
    : Symbolizer(std::move(modules), Options{}) {}

Symbolizer::Symbolizer(ModuleMap modules, Options options)
    : modules_(std::move(modules)), options_(options), created_unloads_(LoaderUnloads()) {
#if !defined(DEEPCONTEXT_HAVE_LIBDW)
  options_.use_debug_info = false;
#endif
}

Symbolizer::~Symbolizer() = default;

Symbolizer::DebugInfo* Symbolizer::debug_info() {
  if (options_.use_debug_info && !debug_info_tried_) {
    debug_info_tried_ = true;
    debug_info_ = std::make_unique<DebugInfo>(options_.index_symbols);
    if (!debug_info_->ok()) debug_info_.reset();
  }
  return debug_info_.get();
}

size_t Symbolizer::DebugInfoModules() const {
  return debug_info_ != nullptr ? debug_info_->reported() : 0;
}

const char* Symbolizer::BackendName() {
  return debug_info() != nullptr ? "libdw" : "dladdr";
}

const SymbolizedFrame& Symbolizer::Symbolize(uintptr_t pc) {
  auto it = cache_.find(pc);
  if (it != cache_.end()) return it->second;
  return cache_.emplace(pc, Lookup(pc)).first->second;
}

void Symbolizer::AdoptFrom(Symbolizer& older) {
  if (older.created_unloads_ != created_unloads_) return;
  for (auto& [start, symbols] : older.dynamic_) {
    const Module* module = modules_.Find(start);
    if (module != nullptr && module->start == start) {
      dynamic_.try_emplace(start, std::move(symbols));
    }
  }
  dynamic_unloads_ = older.dynamic_unloads_;
  // The older libdwfl session (this snapshot's new modules are reported
  // to it when met), unless this one has started its own.
  if (options_.use_debug_info && !debug_info_tried_ && older.debug_info_ != nullptr) {
    debug_info_ = std::move(older.debug_info_);
    older.debug_info_tried_ = false;
    debug_info_tried_ = true;
  }
  // A pc outside every module of the older snapshot may lie in a library
  // loaded since: only answers that named a module carry over.
  for (auto& [pc, frame] : older.cache_) {
    if (!frame.module.empty()) cache_.try_emplace(pc, std::move(frame));
  }
}

const DynamicSymbols* Symbolizer::SymbolsOf(const Module& module) {
  // The index points into the module's own string table: if anything was
  // unloaded since it was read, read again what is loaded now. A load
  // leaves every table read so far valid.
  const uint64_t unloads = LoaderUnloads();
  if (unloads != dynamic_unloads_) {
    dynamic_.clear();
    dynamic_unloads_ = unloads;
  }
  auto it = dynamic_.find(module.start);
  if (it == dynamic_.end()) {
    it = dynamic_.emplace(module.start,
                          DynamicSymbols::Load(module.bias, module.start))
             .first;
  }
  return it->second.get();
}

SymbolizedFrame Symbolizer::Lookup(uintptr_t pc) {
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
  DebugInfo* const debug_info = this->debug_info();
  if (debug_info != nullptr && debug_info->Lookup(call_site, modules_.Find(call_site), &frame)) {
    return frame;
  }
  // The dynamic symbol table only (what dladdr would say, without its scan
  // of every symbol per call); only for the object loaded where the
  // snapshot's module is.
  if (module != nullptr && modules_.Find(call_site) == module) {
    if (const DynamicSymbols* symbols = SymbolsOf(*module)) {
      if (const char* name = symbols->Find(call_site)) {
        frame.function = Demangle(name);
      }
    }
  }
  return frame;
}

}  // namespace deepcontext::native

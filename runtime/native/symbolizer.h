// Turns captured return addresses into readable frames, off the hot path
// (at exit or in a background step).
//
// Two back ends: elfutils libdw (full .symtab / separate debug info and
// file:line, when the build found libdw) and dladdr (the dynamic symbol
// table only: exported functions). Both demangle C++ names. A pc that no
// symbol covers is shown as "libfoo.so+0x1234" (module file name and offset
// of the pc from the load bias, i.e. an ELF virtual address usable with
// addr2line), never as the name of an unrelated neighbouring symbol.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "runtime/native/dynamic_symbols.h"
#include "runtime/native/module_map.h"

namespace deepcontext::native {

// One symbolized pc.
struct SymbolizedFrame {
  std::string function;  // demangled; "" when unknown
  std::string module;    // module path; "" when the pc is in no module
  uintptr_t module_offset = 0;  // pc - module load bias (or the pc itself)
  std::string file;             // source file; "" when unknown
  int line = 0;                 // 0 when unknown

  // `function`, else "libfoo.so+0x1234", else "0x7f...".
  std::string DisplayName() const;
};

// Demangles an Itanium C++ ABI name; returns `name` unchanged when it is not
// a mangled name.
std::string Demangle(const char* name);

class Symbolizer {
 public:
  struct Options {
    // Use libdw when built with it; false forces the dladdr back end.
    bool use_debug_info = true;
    // libdw back end: name pcs from a sorted index of each module's
    // symbols (dwfl_symbol_index.h); false asks dwfl_module_addrinfo,
    // which scans them all per pc (benchmarks).
    bool index_symbols = true;
  };

  // Symbolizes against `modules`, a snapshot taken while the captured
  // libraries were loaded.
  explicit Symbolizer(ModuleMap modules);
  Symbolizer(ModuleMap modules, Options options);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // "libdw" or "dladdr": the back end in use (starts the libdw session).
  const char* BackendName();

  // Modules the libdw session has read so far: those a lookup landed in
  // (0 without the session).
  size_t DebugInfoModules() const;

  // Symbolizes a return address as captured by CaptureNativeStack (the
  // lookup uses pc - 1, the call instruction). Results are cached per pc.
  // Not thread-safe.
  const SymbolizedFrame& Symbolize(uintptr_t pc);

  const ModuleMap& modules() const { return modules_; }

  // Takes over what `older`, a symbolizer of an earlier snapshot, learnt:
  // its symbol tables of modules at the same place in this snapshot, its
  // libdw session (the modules new in this snapshot added to it, the
  // symbol indexes built so far kept), and its answers for pcs inside
  // modules. Call it before this symbolizer's first lookup. Nothing is
  // taken when an object was unloaded between the two (LoaderUnloads());
  // otherwise every module `older` knew is still loaded where it was, and
  // its answers stand. A library loaded meanwhile (CUDA loads several in a
  // run's first steps) then costs a snapshot, not a new read of every table.
  void AdoptFrom(Symbolizer& older);

 private:
  class DebugInfo;  // libdw session, defined only in libdw builds

  SymbolizedFrame Lookup(uintptr_t pc);

  // The libdw session, started on first use (nullptr: dladdr back end).
  DebugInfo* debug_info();

  // The dynamic symbols of `module` when it is still the object loaded
  // there, read on first use (dladdr back end); nullptr otherwise.
  const DynamicSymbols* SymbolsOf(const Module& module);

  ModuleMap modules_;
  Options options_;
  uint64_t created_unloads_;  // LoaderUnloads() when this was made
  bool debug_info_tried_ = false;
  std::unique_ptr<DebugInfo> debug_info_;
  // By module start; a null entry: not loaded (any more) or no table.
  std::unordered_map<uintptr_t, std::unique_ptr<DynamicSymbols>> dynamic_;
  uint64_t dynamic_unloads_ = 0;  // LoaderUnloads() when they were read
  std::unordered_map<uintptr_t, SymbolizedFrame> cache_;
};

}  // namespace deepcontext::native

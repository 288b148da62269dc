// Symbol tables read by the dladdr back end (the GPU image's: no libdw)
// survive libraries being loaded, within one Symbolizer and from one
// snapshot's Symbolizer to the next; an unload invalidates them. The libdw
// back end's session survives the same way.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "runtime/native/dynamic_symbols.h"
#if defined(DEEPCONTEXT_HAVE_LIBDW)
#include "runtime/native/dwfl_symbol_index.h"
#endif
#include "runtime/native/module_map.h"
#include "runtime/native/symbolizer.h"
#include "tests/unit/runtime/native/libc_function.h"

namespace deepcontext::native {
namespace {

using testing::LibcPc;

Symbolizer::Options SymbolTableOnly() {
  Symbolizer::Options options;
  options.use_debug_info = false;
  return options;
}

// Loads a glibc library this process has not loaded yet (each test runs in
// a process of its own under ctest; run whole, later tests find fewer).
// Returns its handle, or nullptr when none is left.
void* LoadAFreshLibrary(std::string* name) {
  for (const char* candidate : {"libcrypt.so.1", "libBrokenLocale.so.1", "libanl.so.1",
                                "libnss_dns.so.2", "libnss_files.so.2"}) {
    const uint64_t before = LoaderGeneration();
    void* handle = dlopen(candidate, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) continue;
    if (LoaderGeneration() != before) {
      *name = candidate;
      return handle;
    }
    dlclose(handle);
  }
  return nullptr;
}

// glibc's table names some functions by their internal alias (__mmap).
bool Names(const std::string& function, const std::string& name) {
  return function == name || function == "__" + name;
}

uintptr_t Pc(const void* function) { return reinterpret_cast<uintptr_t>(function) + 1; }

TEST(SymbolTablesTest, ALibraryLoadedLaterKeepsTheTablesRead) {
  Symbolizer symbolizer(ModuleMap::Snapshot(), SymbolTableOnly());
  const uint64_t before = DynamicSymbols::LoadsSoFar();
  EXPECT_PRED2(Names, symbolizer.Symbolize(LibcPc("mmap")).function, "mmap");
  ASSERT_EQ(DynamicSymbols::LoadsSoFar(), before + 1);  // libc's table

  std::string name;
  void* handle = LoadAFreshLibrary(&name);
  if (handle == nullptr) GTEST_SKIP() << "every candidate library is loaded already";
  // Another libc function: the table read before still serves it.
  EXPECT_PRED2(Names, symbolizer.Symbolize(LibcPc("munmap")).function, "munmap");
  EXPECT_EQ(DynamicSymbols::LoadsSoFar(), before + 1) << "after loading " << name;
}

TEST(SymbolTablesTest, ANewSnapshotTakesOverTablesAndAnswers) {
  auto older = std::make_unique<Symbolizer>(ModuleMap::Snapshot(), SymbolTableOnly());
  const uintptr_t mmap_pc = LibcPc("mmap");
  const std::string mmap_name = older->Symbolize(mmap_pc).function;
  const uint64_t after_first = DynamicSymbols::LoadsSoFar();

  std::string name;
  void* handle = LoadAFreshLibrary(&name);
  if (handle == nullptr) GTEST_SKIP() << "every candidate library is loaded already";
  Symbolizer fresh(ModuleMap::Snapshot(), SymbolTableOnly());
  fresh.AdoptFrom(*older);
  older.reset();  // what was taken over must not depend on it
  EXPECT_EQ(fresh.Symbolize(mmap_pc).function, mmap_name);
  EXPECT_PRED2(Names, fresh.Symbolize(LibcPc("getpid")).function, "getpid");
  EXPECT_EQ(DynamicSymbols::LoadsSoFar(), after_first);

  // The new library is in the new snapshot and read on first use.
  void* symbol = dlsym(handle, name == "libcrypt.so.1" ? "crypt" : "");
  if (symbol != nullptr) {
    const SymbolizedFrame& frame = fresh.Symbolize(Pc(symbol));
    EXPECT_NE(frame.module.find(name), std::string::npos) << frame.module;
    EXPECT_EQ(DynamicSymbols::LoadsSoFar(), after_first + 1);
  }
}

#if defined(DEEPCONTEXT_HAVE_LIBDW)
// The libdw back end: a new snapshot adds the library loaded since to the
// older session, whose symbol indexes stay (a new session would index
// libc again, and every large library met so far).
TEST(SymbolTablesTest, ANewSnapshotKeepsTheLibdwSession) {
  auto older = std::make_unique<Symbolizer>(ModuleMap::Snapshot());
  ASSERT_STREQ(older->BackendName(), "libdw");
  const uint64_t before = DwflSymbolIndex::BuiltSoFar();
  EXPECT_PRED2(Names, older->Symbolize(LibcPc("mmap")).function,
               "mmap");
  ASSERT_EQ(DwflSymbolIndex::BuiltSoFar(), before + 1);  // libc's

  std::string name;
  void* handle = LoadAFreshLibrary(&name);
  if (handle == nullptr) GTEST_SKIP() << "every candidate library is loaded already";
  Symbolizer fresh(ModuleMap::Snapshot());
  fresh.AdoptFrom(*older);
  older.reset();  // what was taken over must not depend on it
  EXPECT_PRED2(Names, fresh.Symbolize(LibcPc("getpid")).function,
               "getpid");
  EXPECT_EQ(DwflSymbolIndex::BuiltSoFar(), before + 1) << "after loading " << name;

  // The new library was added to the session.
  void* symbol = dlsym(handle, name == "libcrypt.so.1" ? "crypt" : "");
  if (symbol != nullptr) {
    const SymbolizedFrame& frame = fresh.Symbolize(Pc(symbol));
    EXPECT_NE(frame.module.find(name), std::string::npos) << frame.module;
    EXPECT_EQ(frame.function, "crypt");
    EXPECT_EQ(DwflSymbolIndex::BuiltSoFar(), before + 2);
  }
}
#endif

TEST(SymbolTablesTest, AnUnloadInvalidatesTablesAndAnswers) {
  std::string name;
  void* handle = LoadAFreshLibrary(&name);
  if (handle == nullptr) GTEST_SKIP() << "every candidate library is loaded already";
  auto older = std::make_unique<Symbolizer>(ModuleMap::Snapshot(), SymbolTableOnly());
  const uintptr_t mmap_pc = LibcPc("mmap");
  older->Symbolize(mmap_pc);
  const uint64_t unloads = LoaderUnloads();
  dlclose(handle);
  if (LoaderUnloads() == unloads) GTEST_SKIP() << name << " stayed loaded";

  // Within the symbolizer: the next table lookup reads libc's table again.
  const uint64_t before = DynamicSymbols::LoadsSoFar();
  EXPECT_PRED2(Names, older->Symbolize(LibcPc("munmap")).function, "munmap");
  EXPECT_EQ(DynamicSymbols::LoadsSoFar(), before + 1);

  // Across snapshots: nothing is taken over, so libc is read again.
  Symbolizer fresh(ModuleMap::Snapshot(), SymbolTableOnly());
  fresh.AdoptFrom(*older);
  EXPECT_PRED2(Names, fresh.Symbolize(LibcPc("getpid")).function, "getpid");
  EXPECT_EQ(DynamicSymbols::LoadsSoFar(), before + 2);
}

}  // namespace
}  // namespace deepcontext::native

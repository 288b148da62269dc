// Cost of capturing a native stack, per unwinder, of mapping it to a
// calling context with and without stack interning, and of naming frames
// from dynamic symbol tables. Not a test: run it by
// hand (timings depend on the machine).
//
//   native_stack_benchmark --benchmark_filter=Capture
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>

#include "runtime/native/dynamic_symbols.h"
#include "runtime/native/module_map.h"
#include "runtime/native/native_stack.h"
#include "runtime/native/stack_cache.h"
#include "runtime/native/symbolizer.h"
#include "tests/unit/runtime/native/call_chain.h"

namespace deepcontext::native {
namespace {

// Recursion levels added on top of the benchmark's own ~8 frames: about 25
// frames per capture in total.
constexpr int kDepth = 17;

void BM_Capture(benchmark::State& state, UnwinderKind kind) {
  if (!UnwinderAvailable(kind)) {
    state.SkipWithError("unwinder not available");
    return;
  }
  const Unwinder unwinder(kind);
  uintptr_t pcs[kMaxNativeDepth];
  int frames = 0;
  for (auto _ : state) {
    frames = native_chain::CaptureAtDepth(unwinder, kDepth, pcs,
                                          kMaxNativeDepth);
    benchmark::DoNotOptimize(pcs);
  }
  state.counters["frames"] = frames;
}
BENCHMARK_CAPTURE(BM_Capture, libunwind, UnwinderKind::kLibunwind);
BENCHMARK_CAPTURE(BM_Capture, glibc_backtrace, UnwinderKind::kGlibcBacktrace);
BENCHMARK_CAPTURE(BM_Capture, frame_pointer, UnwinderKind::kFramePointer);
BENCHMARK_CAPTURE(BM_Capture, cfi_cache, UnwinderKind::kCfiCache);

// What a call-path builder does per event to find the context of a native
// path: either one child lookup per frame in the context tree (no cache),
// or one interning of the whole array plus an array read (cache).
struct PathMapper {
  struct PairHash {
    size_t operator()(const std::pair<uint64_t, uintptr_t>& key) const {
      return std::hash<uint64_t>{}(key.first * 0x9e3779b97f4a7c15ULL ^
                                   key.second);
    }
  };
  std::unordered_map<std::pair<uint64_t, uintptr_t>, uint64_t, PairHash> tree;
  StackTable stacks;
  std::vector<uint64_t> context_of_stack;
  bool use_cache = false;
  uint64_t last = 0;
  int frames = 0;

  uint64_t WalkTree(const uintptr_t* pcs, int n) {
    uint64_t node = 1;
    for (int i = 0; i < n; ++i) {
      auto [it, inserted] = tree.try_emplace({node, pcs[i]}, tree.size() + 2);
      node = it->second;
    }
    return node;
  }

  static void Run(void* arg) {
    auto* self = static_cast<PathMapper*>(arg);
    uintptr_t pcs[kMaxNativeDepth];
    const int n = CaptureNativeStack(pcs, kMaxNativeDepth, 0);
    self->frames = n;
    if (!self->use_cache) {
      self->last = self->WalkTree(pcs, n);
      return;
    }
    const StackId id = self->stacks.Intern(pcs, n);
    if (id >= self->context_of_stack.size()) {
      self->context_of_stack.resize(id + 1, 0);
    }
    uint64_t& context = self->context_of_stack[id];
    if (context == 0) context = self->WalkTree(pcs, n);
    self->last = context;
  }
};

void BM_CaptureToContext(benchmark::State& state, bool use_cache) {
  PathMapper mapper;
  mapper.use_cache = use_cache;
  for (auto _ : state) {
    native_chain::RunAtDepth(kDepth, &PathMapper::Run, &mapper);
    benchmark::DoNotOptimize(mapper.last);
  }
  state.counters["frames"] = mapper.frames;
}
BENCHMARK_CAPTURE(BM_CaptureToContext, per_frame_tree_walk, false);
BENCHMARK_CAPTURE(BM_CaptureToContext, interned_stack, true);

// The mapping alone, on an already captured 25-frame stack.
void BM_MapOnly(benchmark::State& state, bool use_cache) {
  PathMapper mapper;
  uintptr_t pcs[25];
  for (int i = 0; i < 25; ++i) {
    pcs[i] = 0x400000 + static_cast<uintptr_t>(i) * 0x1234;
  }
  std::vector<uint64_t> contexts(2, 0);
  for (auto _ : state) {
    if (use_cache) {
      const StackId id = mapper.stacks.Intern(pcs, 25);
      if (id >= contexts.size()) contexts.resize(id + 1, 0);
      if (contexts[id] == 0) contexts[id] = mapper.WalkTree(pcs, 25);
      benchmark::DoNotOptimize(contexts[id]);
    } else {
      benchmark::DoNotOptimize(mapper.WalkTree(pcs, 25));
    }
  }
}
BENCHMARK_CAPTURE(BM_MapOnly, per_frame_tree_walk, false);
BENCHMARK_CAPTURE(BM_MapOnly, interned_stack, true);

}  // namespace
}  // namespace deepcontext::native

// Naming a pc from the dynamic symbol table: dladdr (a scan of every symbol
// of the module per call) against the sorted index, in libc.
void BM_DynamicSymbolName(benchmark::State& state, bool use_index) {
  const auto base = reinterpret_cast<uintptr_t>(&qsort);
  const deepcontext::native::ModuleMap modules =
      deepcontext::native::ModuleMap::Snapshot();
  const deepcontext::native::Module* module = modules.Find(base);
  const auto symbols = deepcontext::native::DynamicSymbols::Load(module->bias,
                                                               module->start);
  uintptr_t offset = 0;
  for (auto _ : state) {
    const uintptr_t pc = base + (offset = (offset + 97) % 65536);
    if (use_index) {
      benchmark::DoNotOptimize(symbols->Find(pc));
    } else {
      Dl_info info;
      benchmark::DoNotOptimize(dladdr(reinterpret_cast<void*>(pc), &info));
    }
  }
}
BENCHMARK_CAPTURE(BM_DynamicSymbolName, dladdr, false);
BENCHMARK_CAPTURE(BM_DynamicSymbolName, sorted_index, true);

// Naming a new frame in libc and one in libstdc++ right after a new
// snapshot, as FrameResolver takes one whenever a library was loaded (CUDA
// loads several during a run's first steps): with the earlier snapshot's
// tables taken over (Symbolizer::AdoptFrom), or reading both tables again.
// The dladdr back end, the GPU image's (no libdw).
void BM_FirstFramesAfterASnapshot(benchmark::State& state, bool adopt) {
  deepcontext::native::Symbolizer::Options options;
  options.use_debug_info = false;
  const auto libc = reinterpret_cast<uintptr_t>(&qsort);
  const auto libstdcxx = reinterpret_cast<uintptr_t>(
      static_cast<void (*)(void*)>(&::operator delete));
  auto older = std::make_unique<deepcontext::native::Symbolizer>(
      deepcontext::native::ModuleMap::Snapshot(), options);
  benchmark::DoNotOptimize(older->Symbolize(libc + 1));
  benchmark::DoNotOptimize(older->Symbolize(libstdcxx + 1));
  uintptr_t offset = 0;
  for (auto _ : state) {
    auto fresh = std::make_unique<deepcontext::native::Symbolizer>(
        deepcontext::native::ModuleMap::Snapshot(), options);
    if (adopt) fresh->AdoptFrom(*older);
    offset = (offset + 97) % 4096;
    benchmark::DoNotOptimize(fresh->Symbolize(libc + 2 + offset));
    benchmark::DoNotOptimize(fresh->Symbolize(libstdcxx + 2 + offset));
    older = std::move(fresh);
  }
}
BENCHMARK_CAPTURE(BM_FirstFramesAfterASnapshot, tables_read_again, false);
BENCHMARK_CAPTURE(BM_FirstFramesAfterASnapshot, tables_taken_over, true);

// An address in the library the benchmarks below read: libc, or the one
// named by DEEPCONTEXT_BENCH_LIBRARY (loaded here), e.g. a libtorch_cpu.so,
// the largest table a run meets. 0 (with the reason set) when it cannot be
// loaded.
uintptr_t BenchLibraryAddress(benchmark::State& state) {
  const char* path = std::getenv("DEEPCONTEXT_BENCH_LIBRARY");
  if (path == nullptr) return reinterpret_cast<uintptr_t>(&qsort);
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    state.SkipWithError(dlerror());
    return 0;
  }
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr) {
    state.SkipWithError("no link map");
    return 0;
  }
  const deepcontext::native::ModuleMap loaded = deepcontext::native::ModuleMap::Snapshot();
  for (const auto& module : loaded.modules()) {
    if (module.bias == map->l_addr) return module.start;
  }
  state.SkipWithError("module not found");
  return 0;
}

// BenchLibraryAddress's module in `modules`, or nullptr (with the reason
// set).
const deepcontext::native::Module* BenchLibraryModule(
    benchmark::State& state, const deepcontext::native::ModuleMap& modules) {
  const uintptr_t address = BenchLibraryAddress(state);
  if (address == 0) return nullptr;
  const deepcontext::native::Module* module = modules.Find(address);
  if (module == nullptr) state.SkipWithError("module not found");
  return module;
}

// Reading one module's dynamic symbol table and sorting it (see
// BenchLibraryAddress): what a re-read costs most.
void BM_DynamicSymbolsLoad(benchmark::State& state) {
  const deepcontext::native::ModuleMap modules = deepcontext::native::ModuleMap::Snapshot();
  const deepcontext::native::Module* module = BenchLibraryModule(state, modules);
  if (module == nullptr) return;
  size_t symbols = 0;
  for (auto _ : state) {
    const auto table = deepcontext::native::DynamicSymbols::Load(module->bias, module->start);
    symbols = table != nullptr ? table->size() : 0;
  }
  state.counters["symbols"] = static_cast<double>(symbols);
}
BENCHMARK(BM_DynamicSymbolsLoad)->Unit(benchmark::kMillisecond);

#if defined(DEEPCONTEXT_HAVE_LIBDW)
// A new call path's first sight of a library with the libdw back end: a
// fresh symbolizer names 64 pcs spread over the library's code (see
// BenchLibraryAddress), through the sorted index of its symbols (made on
// the first pc) or through dwfl_module_addrinfo's scan of every symbol per
// pc. Both pay the same session set-up.
void BM_FirstSightNamesWithLibdw(benchmark::State& state, bool index) {
  const deepcontext::native::ModuleMap modules = deepcontext::native::ModuleMap::Snapshot();
  const deepcontext::native::Module* module = BenchLibraryModule(state, modules);
  if (module == nullptr) return;
  deepcontext::native::Symbolizer::Options options;
  options.index_symbols = index;
  constexpr int kPcs = 64;
  const uintptr_t step = (module->end - module->start) / (kPcs + 1);
  int named = 0;
  for (auto _ : state) {
    deepcontext::native::Symbolizer symbolizer(deepcontext::native::ModuleMap::Snapshot(),
                                               options);
    named = 0;
    for (int i = 1; i <= kPcs; ++i) {
      named += !symbolizer.Symbolize(module->start + step * i).function.empty();
    }
  }
  state.counters["named"] = named;
}
BENCHMARK_CAPTURE(BM_FirstSightNamesWithLibdw, symbol_scan_per_pc, false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FirstSightNamesWithLibdw, sorted_index, true)
    ->Unit(benchmark::kMillisecond);
#endif

BENCHMARK_MAIN();

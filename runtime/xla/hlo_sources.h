// Source lines of a compiled XLA module's instructions, from its HLO text
// (jax: `compiled.as_text()`, jaxlib `HloModule.to_string()`): JAX records
// the Python traceback of each operation it traces; XLA keeps it as a
// stack frame index printed after the module header
//   FileNames / FunctionNames / FileLocations / StackFrames
// and a `stack_frame_id=N` in each instruction's metadata.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace deepcontext::xla {

struct SourceFrame {
  std::string file;
  std::string function;
  uint32_t line = 0;
};

struct HloSources {
  std::string module;  // "jit_train_step"
  // Instruction name -> frames, outermost first, from the jitted function
  // (its name is the module's without "jit_") down to the operation's line.
  std::unordered_map<std::string, std::vector<SourceFrame>> frames;
};

// Parses an HLO module's text. Instructions without a stack frame, or whose
// traceback does not pass through the jitted function, are left out.
//
// Measured with JAX 0.11.2: the text prints each frame's parent as the
// parent's id plus one (the root's as 1), where the module proto stores
// the id (0 = none); both were compared on the fixture
// (tests/unit/runtime/xla/fixtures/hlo_train_step.txt).
HloSources ParseHloSources(std::string_view text);

// Modules registered by the Python package as JAX compiles them, by name.
// A name compiled again (other shapes) keeps, per instruction, the frames
// both versions agree on, and drops an instruction whose frames differ.
class HloSourceRegistry {
 public:
  static HloSourceRegistry& Global();
  void Add(HloSources sources);
  // The frames of `instruction` in `module`; empty when unknown.
  std::vector<SourceFrame> Frames(std::string_view module, std::string_view instruction) const;
  size_t modules() const;
  // Changes with every Add(): cached lookups made before are stale.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }

 private:
  std::atomic<uint64_t> version_{0};
  mutable std::mutex mutex_;
  std::unordered_map<std::string, HloSources> modules_;
  // Instructions whose frames differed between two compilations of a name.
  std::unordered_map<std::string, std::vector<std::string>> conflicts_;
};

}  // namespace deepcontext::xla

// Synthetic CPython objects laid out in plain memory through a FrameLayout,
// for testing the frame reader without an interpreter.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/python/layouts/frame_layout.h"

namespace deepcontext::python::fake_cpython {

// One zeroed, 16-byte aligned block large enough for any struct we fake
// (code objects keep their bytecode inline after co_code_adaptive).
struct alignas(16) FakeBlock {
  unsigned char bytes[1024] = {};

  template <typename T>
  void Set(int32_t offset, T value) {
    std::memcpy(bytes + offset, &value, sizeof(T));
  }
  char* At(int32_t offset) { return reinterpret_cast<char*>(bytes) + offset; }
};

// Owns fake objects for one layout; addresses stay stable.
class FakeInterpreter {
 public:
  explicit FakeInterpreter(const FrameLayout& layout) : layout_(layout) {}

  const FrameLayout& layout() const { return layout_; }
  const void* code_type() const { return &code_type_; }
  const void* unicode_type() const { return &unicode_type_; }

  FakeBlock* New() {
    blocks_.push_back(std::make_unique<FakeBlock>());
    return blocks_.back().get();
  }

  // A compact str: ASCII when `kind` is 1 and every unit is < 0x80.
  FakeBlock* Unicode(const std::vector<uint32_t>& units, int kind,
                     bool compact = true, bool ready = true) {
    FakeBlock* block = New();
    block->Set<const void*>(layout_.object_type, &unicode_type_);
    block->Set<int64_t>(layout_.unicode_length,
                        static_cast<int64_t>(units.size()));
    bool ascii = kind == 1;
    for (uint32_t unit : units) ascii = ascii && unit < 0x80;
    uint32_t state = static_cast<uint32_t>(kind) << layout_.state_kind_shift;
    if (compact) state |= layout_.state_compact_mask;
    if (ascii) state |= layout_.state_ascii_mask;
    if (ready) state |= layout_.state_ready_mask;
    block->Set<uint32_t>(layout_.unicode_state, state);
    char* data = block->At(ascii ? layout_.ascii_data : layout_.compact_data);
    for (size_t i = 0; i < units.size(); ++i) {
      if (kind == 1) data[i] = static_cast<char>(units[i]);
      if (kind == 2) {
        const auto unit = static_cast<uint16_t>(units[i]);
        std::memcpy(data + 2 * i, &unit, 2);
      }
      if (kind == 4) std::memcpy(data + 4 * i, &units[i], 4);
    }
    return block;
  }

  FakeBlock* Ascii(const std::string& text) {
    return Unicode(std::vector<uint32_t>(text.begin(), text.end()), 1);
  }

  // A code object named `name` in "file.py" starting at `first_line`.
  FakeBlock* Code(const std::string& name, int first_line,
                  int first_traceable = 0) {
    FakeBlock* block = New();
    block->Set<const void*>(layout_.object_type, &code_type_);
    block->Set<const void*>(layout_.code_name, Ascii(name));
    block->Set<const void*>(layout_.code_filename, file_);
    block->Set<int32_t>(layout_.code_firstlineno, first_line);
    if (layout_.code_qualname >= 0) {
      block->Set<const void*>(layout_.code_qualname, Ascii("Q." + name));
    }
    if (layout_.code_firsttraceable >= 0) {
      block->Set<int32_t>(layout_.code_firsttraceable, first_traceable);
    }
    return block;
  }

  // A frame running `code` at byte offset `lasti`, with `previous` as caller.
  FakeBlock* Frame(FakeBlock* code, int lasti, FakeBlock* previous,
                   int owner = 0) {
    FakeBlock* block = New();
    block->Set<const void*>(layout_.frame_code, code);
    block->Set<const void*>(layout_.frame_previous, previous);
    if (layout_.family == FrameFamily::kFrameObject) {
      block->Set<int32_t>(layout_.frame_lasti, lasti / layout_.lasti_unit);
    } else {
      block->Set<const void*>(layout_.frame_instr,
                              code->At(layout_.code_adaptive + lasti));
      block->Set<char>(layout_.frame_owner, static_cast<char>(owner));
    }
    return block;
  }

  // A thread state whose current frame is `frame`.
  const void* ThreadState(const void* frame) {
    FakeBlock* tstate = New();
    if (layout_.tstate_cframe >= 0) {
      FakeBlock* cframe = New();
      cframe->Set<const void*>(layout_.cframe_current_frame, frame);
      tstate->Set<const void*>(layout_.tstate_cframe, cframe);
    } else {
      tstate->Set<const void*>(layout_.tstate_frame, frame);
    }
    return tstate;
  }

 private:
  const FrameLayout& layout_;
  FakeBlock code_type_;
  FakeBlock unicode_type_;
  std::vector<std::unique_ptr<FakeBlock>> blocks_;
  FakeBlock* file_ = Ascii("file.py");
};

}  // namespace deepcontext::python::fake_cpython

#include "runtime/native/python_splice.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/native/native_stack.h"
#include "tests/unit/runtime/native/call_chain.h"

namespace deepcontext::native {
namespace {

constexpr NativeFrameClass O = NativeFrameClass::kOther;
constexpr NativeFrameClass E = NativeFrameClass::kEvalLoop;
constexpr NativeFrameClass I = NativeFrameClass::kInterpreter;

// "N3" for native frame 3, "P1" for Python frame 1, space separated.
std::string Splice(const std::vector<NativeFrameClass>& native,
                   const std::vector<bool>& entries,
                   SpliceOptions options = {}, int capacity = 64) {
  bool python_entry[64] = {};
  for (size_t i = 0; i < entries.size(); ++i) python_entry[i] = entries[i];
  std::vector<SplicedFrame> out(static_cast<size_t>(capacity));
  const int n = SplicePythonFrames(native.data(),
                                   static_cast<int>(native.size()),
                                   python_entry,
                                   static_cast<int>(entries.size()), options,
                                   out.data(), capacity);
  std::string text;
  for (int i = 0; i < n; ++i) {
    if (!text.empty()) text += ' ';
    text += out[i].source == SplicedFrame::Source::kNative ? 'N' : 'P';
    text += std::to_string(out[i].index);
  }
  return text;
}

TEST(SplicePythonFramesTest, OneFramePerActivationBefore311) {
  // main, Py_RunMain, eval, vectorcall, eval, vectorcall, eval, torch C++
  // function, ATen op.
  EXPECT_EQ(Splice({O, I, E, I, E, I, E, O, O}, {true, true, true}),
            "N0 P0 P1 P2 N7 N8");
}

TEST(SplicePythonFramesTest, SeveralFramesPerActivationFrom311) {
  // The extension function at native 4 calls back into Python: a second
  // activation starting at the entry frame P3.
  EXPECT_EQ(Splice({O, I, E, I, O, I, E, O},
                   {true, false, false, true, false}),
            "N0 P0 P1 P2 N4 P3 P4 N7");
}

TEST(SplicePythonFramesTest, NestedActivationsWithoutNativeBetween) {
  // eval -> vectorcall -> eval (e.g. a generator resumed from C): both
  // activations are spliced in order.
  EXPECT_EQ(Splice({E, I, E, O}, {true, false, true}), "P0 P1 P2 N3");
}

TEST(SplicePythonFramesTest, ExtraLoopActivationsStayNative) {
  // The Python reader's depth limit cut the outer frames: only the
  // innermost activation has Python frames.
  EXPECT_EQ(Splice({E, I, E, O}, {true}), "N0 P0 N3");
}

TEST(SplicePythonFramesTest, PythonFramesBeyondNativeStackGoOutermost) {
  // The native unwinder stopped early: the outer Python frames have no
  // activation in the native stack and are placed above it.
  EXPECT_EQ(Splice({O, E, O}, {true, true, true}), "P0 P1 N0 P2 N2");
}

TEST(SplicePythonFramesTest, TruncatedPythonStackStartsMidActivation) {
  // The outermost captured Python frame is not an entry frame (its
  // activation's entry frame was cut); it still belongs to the outer
  // activation.
  EXPECT_EQ(Splice({E, O, E, O}, {false, false, true}), "P0 P1 N1 P2 N3");
}

TEST(SplicePythonFramesTest, NoPythonFrames) {
  EXPECT_EQ(Splice({O, I, O}, {}), "N0 N2");
  EXPECT_EQ(Splice({O, E, O}, {}), "N0 N1 N2");
  EXPECT_EQ(Splice({}, {true, false}), "P0 P1");
  EXPECT_EQ(Splice({}, {}), "");
}

TEST(SplicePythonFramesTest, KeepInterpreterFramesOnRequest) {
  SpliceOptions options;
  options.keep_interpreter_frames = true;
  EXPECT_EQ(Splice({O, I, E, O}, {true}, options), "N0 N1 P0 N3");
}

TEST(SplicePythonFramesTest, CapacityKeepsInnermostFrames) {
  EXPECT_EQ(Splice({O, E, O, O}, {true, false}, {}, 3), "P1 N2 N3");
  EXPECT_EQ(Splice({O, E, O, O}, {true, false}, {}, 4), "P0 P1 N2 N3");
}

TEST(SplicePythonFramesTest, NullInputs) {
  SplicedFrame out[4];
  EXPECT_EQ(SplicePythonFrames(nullptr, 3, nullptr, 2, {}, out, 4), 0);
  EXPECT_EQ(SplicePythonFrames(nullptr, 0, nullptr, 0, {}, nullptr, 4), 0);
}

TEST(InterpreterRangesTest, ClassifiesCallSites) {
  InterpreterRanges ranges;
  ASSERT_TRUE(ranges.AddEvalRange(0x1000, 0x2000));
  ranges.SetInterpreterRange(0x800, 0x4000);
  EXPECT_EQ(ranges.Classify(0x1001), NativeFrameClass::kEvalLoop);
  // Return address right after a call at the end of the function.
  EXPECT_EQ(ranges.Classify(0x2000), NativeFrameClass::kEvalLoop);
  EXPECT_EQ(ranges.Classify(0x1000), NativeFrameClass::kInterpreter);
  EXPECT_EQ(ranges.Classify(0x3000), NativeFrameClass::kInterpreter);
  EXPECT_EQ(ranges.Classify(0x5000), NativeFrameClass::kOther);
  EXPECT_EQ(ranges.Classify(0), NativeFrameClass::kOther);
  EXPECT_FALSE(ranges.AddEvalRange(0x10, 0x10));
}

TEST(InterpreterRangesTest, DetectFailsOutsidePython) {
  InterpreterRanges ranges;
  EXPECT_FALSE(ranges.Detect());
  EXPECT_EQ(ranges.eval_range_count(), 0);
}

// A real capture where ChainB plays the eval loop and ChainA an interpreter
// function: ChainB's frame becomes the Python frames, ChainA's disappears.
TEST(InterpreterRangesTest, SplicesARealCapture) {
  auto range_of = [](const void* function, uintptr_t* begin, uintptr_t* end) {
    Dl_info info;
    ASSERT_NE(dladdr(function, &info), 0);
    ASSERT_NE(info.dli_sname, nullptr) << "test binary needs -rdynamic";
    ASSERT_TRUE(FindFunctionRange(info.dli_sname, begin, end));
    EXPECT_EQ(*begin, reinterpret_cast<uintptr_t>(function));
  };
  uintptr_t b_begin = 0, b_end = 0, a_begin = 0, a_end = 0;
  range_of(reinterpret_cast<const void*>(&native_chain::ChainB), &b_begin,
           &b_end);
  range_of(reinterpret_cast<const void*>(&native_chain::ChainA), &a_begin,
           &a_end);
  InterpreterRanges ranges;
  ASSERT_TRUE(ranges.AddEvalRange(b_begin, b_end));
  ranges.SetInterpreterRange(a_begin, a_end);

  uintptr_t pcs[kMaxNativeDepth];
  const int n = native_chain::ChainA({nullptr, 0}, pcs, kMaxNativeDepth);
  ASSERT_GE(n, 3);
  NativeFrameClass classes[kMaxNativeDepth];
  ranges.ClassifyAll(pcs, n, classes);
  EXPECT_EQ(classes[n - 1], NativeFrameClass::kOther);        // ChainC
  EXPECT_EQ(classes[n - 2], NativeFrameClass::kEvalLoop);     // ChainB
  EXPECT_EQ(classes[n - 3], NativeFrameClass::kInterpreter);  // ChainA

  const bool python_entry[] = {true, false};
  SplicedFrame out[kMaxNativeDepth + 2];
  const int m = SplicePythonFrames(classes, n, python_entry, 2, {}, out,
                                   kMaxNativeDepth + 2);
  ASSERT_EQ(m, n - 2 + 2);
  EXPECT_EQ(out[m - 1], (SplicedFrame{SplicedFrame::Source::kNative, n - 1}));
  EXPECT_EQ(out[m - 2], (SplicedFrame{SplicedFrame::Source::kPython, 1}));
  EXPECT_EQ(out[m - 3], (SplicedFrame{SplicedFrame::Source::kPython, 0}));
  EXPECT_EQ(out[m - 4], (SplicedFrame{SplicedFrame::Source::kNative, n - 4}));
}

}  // namespace
}  // namespace deepcontext::native

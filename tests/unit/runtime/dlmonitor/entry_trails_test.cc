// EntryTrails (runtime/dlmonitor/entry_trails.h): an op entry after the
// same entry capture, from the same caller frame, is replayed from a kept
// trail only while its stack is the one kept, frame for frame, and only
// while the previous capture's frames outer of where the trail met it are
// still in place.
#include <gtest/gtest.h>

#include <iterator>
#include <memory>
#include <vector>

#include "runtime/dlmonitor/entry_trails.h"
#include "runtime/native/native_stack.h"
#include "runtime/native/stack_cache.h"

namespace deepcontext::dlmonitor {
namespace {

// A thread's entry captures, as CallPathBuilder::NativeContext keeps them:
// each one unwinds into the previous one's arrays and meets it.
struct Scene {
  EntryTrails* trails = nullptr;
  native::StackTable* stacks = nullptr;
  uintptr_t pcs[native::kMaxNativeDepth];
  uintptr_t sps[native::kMaxNativeDepth];
  int count = 0;
  native::StackId stack = native::kNoStack;
  bool stale = false;  // before this entry, one outer frame of the previous capture moves
  // What the entry found.
  bool replayed = false;
  bool same_as_unwound = false;
};

// Where the adapter reports an op entry.
__attribute__((noinline)) void Enter(Scene* scene) {
  const native::CallerFrame caller = DEEPCONTEXT_CALLER_FRAME();
  // The frames an unwind from here gives, to compare with.
  uintptr_t want_pcs[native::kMaxNativeDepth];
  uintptr_t want_sps[native::kMaxNativeDepth];
  native::AnchorUse none;
  const int want = native::Unwinder(native::UnwinderKind::kCfiCache)
                       .CaptureNear(nullptr, 0, want_pcs, want_sps, native::kMaxNativeDepth,
                                    &none, &caller);
  if (scene->stale && scene->count > 3) scene->pcs[1] += 1;
  const native::StackAnchor previous{scene->pcs, scene->sps, scene->count, /*live=*/false};
  const EntryTrails::Key key{scene->stack, caller.pc, caller.cfa};
  int count = 0;
  native::AnchorUse use;
  native::StackId stack = native::kNoStack;
  if (scene->stack != native::kNoStack) {
    stack = scene->trails->Replay(key, caller, previous, scene->pcs, scene->sps, &count,
                                  &use.copied);
  }
  scene->replayed = stack != native::kNoStack;
  if (!scene->replayed) {
    count = native::Unwinder(native::UnwinderKind::kCfiCache)
                .CaptureNear(&previous, scene->count > 0 ? 1 : 0, scene->pcs, scene->sps,
                             native::kMaxNativeDepth, &use, &caller);
    stack = scene->stacks->Intern(scene->pcs, count);
    if (scene->stack != native::kNoStack && use.anchor == 0) {
      scene->trails->Keep(key, stack, caller, scene->pcs, scene->sps, count, use.copied);
    }
  }
  scene->same_as_unwound = count == want;
  for (int i = 0; scene->same_as_unwound && i < count; ++i) {
    scene->same_as_unwound = scene->pcs[i] == want_pcs[i] && scene->sps[i] == want_sps[i];
  }
  scene->count = count;
  scene->stack = stack;
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void Binding(Scene* scene) {
  Enter(scene);
  asm volatile("" ::: "memory");
}

// Two bindings with frames of one size, called from one call site.
extern "C" {
__attribute__((noinline, visibility("default"))) void EntryTrailsTestViaX(Scene* scene) {
  volatile int tag = 1;
  (void)tag;
  Binding(scene);
  asm volatile("" ::: "memory");
}
__attribute__((noinline, visibility("default"))) void EntryTrailsTestViaY(Scene* scene) {
  volatile int tag = 2;
  (void)tag;
  Binding(scene);
  asm volatile("" ::: "memory");
}
}

using Via = void (*)(Scene*);

struct Step {
  Via via;
  bool stale = false;
};

struct Outcome {
  bool replayed = false;
  bool same_as_unwound = false;
};

class EntryTrailsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!native::UnwinderAvailable(native::UnwinderKind::kCfiCache)) {
      GTEST_SKIP() << "no cfi rules here";
    }
  }

  // Every entry from one call instruction, as a Python loop's ops come
  // from one interpreter frame; only `via` tells them apart.
  std::vector<Outcome> RunAll(const std::vector<Step>& steps) {
    std::vector<Outcome> outcomes;
    for (const Step& step : steps) {
      scene_.stale = step.stale;
      Via volatile via = step.via;
      via(&scene_);
      outcomes.push_back(Outcome{scene_.replayed, scene_.same_as_unwound});
    }
    return outcomes;
  }

  std::unique_ptr<EntryTrails> trails_ = std::make_unique<EntryTrails>();
  native::StackTable stacks_;
  Scene scene_{trails_.get(), &stacks_};
};

TEST_F(EntryTrailsTest, ReplaysOnlyTheStackItWasKeptFor) {
  const Via x = &EntryTrailsTestViaX;
  const Via y = &EntryTrailsTestViaY;
  const std::vector<Outcome> got = RunAll({
      {x},  // 0: the first capture, S_x
      {x},  // 1: S_x again: the walk meets it at once, no trail to keep
      {x},  // 2: the same
      {y},  // 3: after S_x, one frame differs: unwound, S_y; the key's first sight
      {x},  // 4: after S_y: unwound, S_x; first sight
      {y},  // 5: after S_x: unwound again, its trail kept
      {x},  // 6: after S_y: likewise
      {y},  // 7: after S_x: replayed from 5's trail
      {x},  // 8: after S_y: replayed from 6's
      {x},  // 9: S_x again, as 1
      {y, /*stale=*/true},  // 10: after S_x, one of its outer frames moved: unwound
      {x},  // 11: after S_y: replayed
      {y},  // 12: after S_x: replayed
  });
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(got[i].same_as_unwound) << "entry " << i;
  }
  const bool replayed[] = {false, false, false, false, false, false, false,
                           true,  true,  false, false, true,  true};
  ASSERT_EQ(got.size(), std::size(replayed));
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].replayed, replayed[i]) << "entry " << i;
  }
}

}  // namespace
}  // namespace deepcontext::dlmonitor

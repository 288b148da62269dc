// One object of type T per thread, for state kept on framework callback
// paths.
#pragma once

#include <cstdint>

namespace deepcontext {

// Returns the calling thread's T, created on first use and destroyed when the
// thread exits, or nullptr while the thread is exiting: framework callbacks
// can still fire during thread teardown, while or after the destructor runs,
// and a trivially destructible pointer that outlives it turns those late
// calls into no-ops instead of use-after-free. `Tag` separates users of the
// same T.
//
// Called several times per framework op. A thread_local with a destructor is
// reached through an initialization guard (more thread-local lookups, each a
// call in a shared library), so the common case reads one trivially
// destructible pointer and only creation and teardown touch the holder. The
// pointer also says "exiting" (kGone), which keeps the thread-local block
// small (tests/unit/runtime/check_tls_size.cmake).
namespace thread_instance {

inline constexpr uintptr_t kGone = 1;

template <typename T, typename Tag>
inline thread_local T* current = nullptr;

// Creation and teardown, out of line: the callers sit on the op path, whose
// code is kept small (runtime/common/hot_path.h).
template <typename T, typename Tag>
[[gnu::noinline, gnu::cold]] T* Create() {
  T*& pointer = current<T, Tag>;
  if (pointer != nullptr) return nullptr;  // the thread is exiting
  struct Holder {
    T* instance = nullptr;
    ~Holder() {
      current<T, Tag> = reinterpret_cast<T*>(kGone);
      delete instance;
      instance = nullptr;
    }
  };
  static thread_local Holder holder;
  if (holder.instance == nullptr) holder.instance = new T();
  pointer = holder.instance;
  return pointer;
}

}  // namespace thread_instance

template <typename T, typename Tag = T>
T* ThreadInstance() {
  T* pointer = thread_instance::current<T, Tag>;
  if (reinterpret_cast<uintptr_t>(pointer) > thread_instance::kGone) [[likely]] {
    return pointer;
  }
  return thread_instance::Create<T, Tag>();
}

}  // namespace deepcontext

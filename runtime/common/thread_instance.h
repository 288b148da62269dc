// One object of type T per thread, for state kept on framework callback
// paths.
#pragma once

namespace deepcontext {

// Returns the calling thread's T, created on first use and destroyed when the
// thread exits, or nullptr while the thread is exiting: framework callbacks
// can still fire during thread teardown, after the destructor ran, and a
// trivially destructible flag that outlives it turns those late calls into
// no-ops instead of use-after-free. `Tag` separates users of the same T.
template <typename T, typename Tag = T>
T* ThreadInstance() {
  static thread_local bool gone = false;
  struct Holder {
    T* instance = nullptr;
    ~Holder() {
      delete instance;
      instance = nullptr;
      gone = true;
    }
  };
  static thread_local Holder holder;
  if (gone) return nullptr;
  if (holder.instance == nullptr) holder.instance = new T();
  return holder.instance;
}

}  // namespace deepcontext

#include "runtime/common/thread_name.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <string>
#include <thread>

namespace deepcontext {
namespace {

std::string NameOf(pthread_t thread) {
  char name[64] = {};
  if (pthread_getname_np(thread, name, sizeof(name)) != 0) return "<error>";
  return name;
}

TEST(ThreadName, NamesTheCallingThreadOnly) {
  const std::string before = NameOf(pthread_self());
  std::string seen;
  std::thread([&] {
    NameThisThread("dc-test");
    seen = NameOf(pthread_self());
  }).join();
  EXPECT_EQ(seen, "dc-test");
  EXPECT_EQ(NameOf(pthread_self()), before);
}

TEST(ThreadName, CutsNamesToWhatLinuxKeeps) {
  std::string seen;
  std::thread([&] {
    NameThisThread("dc-a-name-longer-than-fifteen");
    seen = NameOf(pthread_self());
  }).join();
  EXPECT_EQ(seen, "dc-a-name-longe");
  EXPECT_EQ(seen.size(), kMaxThreadName);
}

}  // namespace
}  // namespace deepcontext

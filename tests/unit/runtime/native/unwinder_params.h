// Parameters of the tests that run once per unwinder: those of `kinds`
// this build and machine have, and gtest-safe names for them
// ("glibc-backtrace" -> "glibc_backtrace").
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "runtime/native/native_stack.h"

namespace deepcontext::native::testing {

inline std::vector<UnwinderKind> AvailableUnwinders(std::initializer_list<UnwinderKind> kinds) {
  std::vector<UnwinderKind> available;
  for (UnwinderKind kind : kinds) {
    if (UnwinderAvailable(kind)) available.push_back(kind);
  }
  return available;
}

inline std::string UnwinderParamName(const ::testing::TestParamInfo<UnwinderKind>& info) {
  std::string name = UnwinderKindName(info.param);
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

}  // namespace deepcontext::native::testing

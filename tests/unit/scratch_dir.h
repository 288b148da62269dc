// A fresh empty directory for one test, removed with its contents when the
// object goes out of scope. Header-only, for every unit-test binary.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace deepcontext {

class ScratchDir {
 public:
  ScratchDir() {
    std::string templ = ::testing::TempDir() + "dctx_test_XXXXXX";
    char* made = mkdtemp(templ.data());
    EXPECT_NE(made, nullptr) << "mkdtemp " << templ << ": " << std::strerror(errno);
    path_ = templ;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // Names of the entries in the directory, sorted, without "." and "..".
  std::vector<std::string> List() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::string path_;
};

}  // namespace deepcontext

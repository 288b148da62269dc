#include "runtime/cupti/cupti_copies.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "tests/unit/scratch_dir.h"

namespace deepcontext::cupti {
namespace {

TEST(CuptiCopies, OthersAreTheCopiesThatAreNotOurs) {
  const std::vector<std::string> loaded = {"/torch/nvidia/cu13/lib/libcupti.so.13",
                                           "/triton/backends/nvidia/lib/cupti/libcupti.so.12"};
  EXPECT_EQ(OtherCuptiCopies(loaded, loaded[0]),
            std::vector<std::string>{loaded[1]});
  EXPECT_TRUE(OtherCuptiCopies({loaded[0]}, loaded[0]).empty());
  // Without knowing ours, none is named: ours would be among them.
  EXPECT_TRUE(OtherCuptiCopies(loaded, "").empty());
}

TEST(CuptiCopies, TheNoteNamesEachOtherCopy) {
  EXPECT_EQ(OtherCopiesNote({}), "");
  const std::string note = OtherCopiesNote({"/a/libcupti.so.12", "/b/libcupti.so"});
  EXPECT_NE(note.find("another copy of CUPTI is loaded (/a/libcupti.so.12, /b/libcupti.so)"),
            std::string::npos)
      << note;
  EXPECT_NE(note.find("Proton"), std::string::npos) << note;
}

// A library whose file is called libcupti.so.* is found once loaded, by its
// real path, and so is the library holding one of its symbols.
TEST(CuptiCopies, ALoadedCopyIsFoundByItsFileName) {
  ScratchDir scratch;
  const std::filesystem::path folder(scratch.path());
  const std::filesystem::path copy = folder / "libcupti.so.99";
  std::filesystem::copy_file(DEEPCONTEXT_FAKE_LOADED_CUPTI, copy);
  const std::filesystem::path link = folder / "libcupti.so";
  std::filesystem::create_symlink(copy, link);

  std::vector<std::string> before = LoadedCuptiCopies();
  EXPECT_EQ(std::count(before.begin(), before.end(), copy.string()), 0);
  void* handle = dlopen(link.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  const std::vector<std::string> loaded = LoadedCuptiCopies();
  // Opened through the link, named by the file it points to.
  EXPECT_EQ(std::count(loaded.begin(), loaded.end(), copy.string()), 1);
  const void* symbol = dlsym(handle, "cuptiGetVersion");
  ASSERT_NE(symbol, nullptr);
  EXPECT_EQ(LibraryHolding(symbol), copy.string());
  EXPECT_TRUE(OtherCuptiCopies(loaded, copy.string()) ==
              OtherCuptiCopies(before, copy.string()));
  EXPECT_EQ(LibraryHolding(nullptr), "");
  dlclose(handle);
}

}  // namespace
}  // namespace deepcontext::cupti

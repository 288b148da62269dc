#include "runtime/cupti/cupti_loader.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include "runtime/cupti/cupti_functions.h"

namespace deepcontext::cupti {
namespace {

TEST(CuptiLoaderTest, ApiMajorHandlesBothVersionSchemes) {
  EXPECT_EQ(CuptiApiMajor(130001), 13);
  EXPECT_EQ(CuptiApiMajor(140200), 14);
  EXPECT_EQ(CuptiApiMajor(27), 12);
}

TEST(CuptiLoaderTest, DefaultCandidatesPreferTheHeaderSoname) {
  const std::vector<std::string> candidates = DefaultCuptiCandidates();
  ASSERT_GE(candidates.size(), 3u);
  bool has_toolkit = false;
  for (const std::string& c : candidates) {
    if (c.rfind("/usr/local/cuda/", 0) == 0) has_toolkit = true;
  }
  EXPECT_TRUE(has_toolkit);
}

// On a machine without GPU the toolkit's libcupti may or may not be
// present; either way loading must not crash and must explain itself.
TEST(CuptiLoaderTest, DefaultLoadEitherWorksOrSaysWhy) {
  const CuptiLibrary& library = CuptiLibrary::Get();
  EXPECT_EQ(library.header_version(), static_cast<uint32_t>(CUPTI_API_VERSION));
  if (library.available()) {
    EXPECT_TRUE(library.status().ok());
    EXPECT_FALSE(library.path().empty());
    EXPECT_EQ(CuptiApiMajor(library.runtime_version()),
              CuptiApiMajor(library.header_version()));
    const CuptiFunctions* f = library.functions();
    ASSERT_NE(f, nullptr);
    EXPECT_NE(f->subscribe, nullptr);
    EXPECT_NE(f->activity_get_next_record, nullptr);
    EXPECT_NE(library.ResultString(CUPTI_ERROR_INVALID_PARAMETER), "");
    std::printf("loaded %s, CUPTI API version %u\n", library.path().c_str(),
                library.runtime_version());
  } else {
    EXPECT_FALSE(library.status().ok());
    EXPECT_EQ(library.status().message().rfind("not available: ", 0), 0u)
        << library.status().message();
    EXPECT_EQ(library.functions(), nullptr);
    EXPECT_EQ(library.ResultString(1), "");
    std::printf("%s\n", library.status().message().c_str());
  }
}

TEST(CuptiLoaderTest, MissingLibraryIsReported) {
  CuptiLoadOptions options;
  options.use_loaded = false;
  options.candidates = {"/nonexistent/libcupti.so.13"};
  const auto library = CuptiLibrary::Load(options);
  EXPECT_FALSE(library->available());
  EXPECT_NE(library->status().message().find("not available: libcupti not found"),
            std::string::npos);
  EXPECT_NE(library->status().message().find("/nonexistent/libcupti.so.13"), std::string::npos);
}

TEST(CuptiLoaderTest, LibraryWithoutCuptiSymbolsIsReported) {
  CuptiLoadOptions options;
  options.use_loaded = false;
  options.candidates = {"libz.so.1"};
  const auto library = CuptiLibrary::Load(options);
  EXPECT_FALSE(library->available());
  EXPECT_NE(library->status().message().find("lacks cuptiGetVersion"), std::string::npos)
      << library->status().message();
}

// A framework loads its own libcupti by path (the Python launcher loads it
// first, python/deepcontext/_framework_cupti.py): the loader takes that
// copy, found by its SONAME, rather than a second one of its own.
TEST(CuptiLoaderTest, ACopyAlreadyLoadedIsTheOneTaken) {
  // Where an earlier test of this process (CuptiLibrary::Get) loaded the
  // toolkit's libcupti, the loader rightly takes that one: this test needs
  // a process of its own, as ctest gives it.
  const std::string loaded =
      CuptiLibrary::Load({.candidates = {"/nonexistent/libcupti.so"}})->path();
  if (!loaded.empty()) GTEST_SKIP() << "a libcupti is loaded already: " << loaded;
  void* framework_copy = dlopen(DEEPCONTEXT_FAKE_LOADED_CUPTI, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(framework_copy, nullptr) << dlerror();
  CuptiLoadOptions options;
  options.candidates = {"/nonexistent/libcupti.so.13"};
  const auto library = CuptiLibrary::Load(options);
  EXPECT_FALSE(library->available());
  // The stand-in has cuptiGetVersion only.
  EXPECT_NE(library->status().message().find("lacks cuptiGetResultString"), std::string::npos)
      << library->status().message();
  EXPECT_EQ(library->path(), DEEPCONTEXT_FAKE_LOADED_CUPTI);

  options.use_loaded = false;
  EXPECT_NE(CuptiLibrary::Load(options)->status().message().find("libcupti not found"),
            std::string::npos);
}

}  // namespace
}  // namespace deepcontext::cupti

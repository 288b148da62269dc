#include "runtime/python/object_access.h"

#include <gtest/gtest.h>

#include <string>

#include "runtime/python/version_support.h"
#include "tests/unit/runtime/python/fake_cpython.h"

namespace deepcontext::python {
namespace {

// The generated layout for 3.<minor> on this architecture, or nullptr.
const FrameLayout* LayoutFor(int minor) {
  const StatusOr<const FrameLayout*> layout = FindLayout({3, minor, 0});
  return layout.ok() ? *layout : nullptr;
}

using fake_cpython::FakeBlock;
using fake_cpython::FakeInterpreter;

// Layouts with and without wstr / the `ready` bit (removed in 3.12).
class ObjectAccessTest : public ::testing::TestWithParam<const FrameLayout*> {
 protected:
  void SetUp() override {
    if (GetParam() == nullptr) GTEST_SKIP() << "no layout here";
  }
  std::string Read(FakeInterpreter& fake, const void* unicode) {
    std::string out;
    if (!AppendUnicodeUtf8(fake.layout(), fake.unicode_type(), unicode, &out)) {
      return "<false>";
    }
    return out;
  }
};

TEST_P(ObjectAccessTest, ReadsCompactStringsOfEveryKind) {
  FakeInterpreter fake(*GetParam());
  EXPECT_EQ(Read(fake, fake.Ascii("forward")), "forward");
  EXPECT_EQ(Read(fake, fake.Ascii("")), "");
  EXPECT_EQ(Read(fake, fake.Unicode({'c', 'a', 'f', 0xE9}, 1)),
            "caf\xC3\xA9");
  EXPECT_EQ(Read(fake, fake.Unicode({0x51FD, 0x6570}, 2)),
            "\xE5\x87\xBD\xE6\x95\xB0");
  EXPECT_EQ(Read(fake, fake.Unicode({'x', 0x1F600}, 4)), "x\xF0\x9F\x98\x80");
}

TEST_P(ObjectAccessTest, RefusesWhatItCannotReadSafely) {
  FakeInterpreter fake(*GetParam());
  EXPECT_EQ(Read(fake, nullptr), "<false>");
  EXPECT_EQ(Read(fake, fake.Unicode({'a'}, 1, /*compact=*/false)), "<false>");
  // Not a str: the type pointer differs.
  EXPECT_EQ(Read(fake, fake.Code("f", 1)), "<false>");
  FakeBlock* negative = fake.Ascii("abc");
  negative->Set<int64_t>(fake.layout().unicode_length, -1);
  EXPECT_EQ(Read(fake, negative), "<false>");
  FakeBlock* huge = fake.Ascii("abc");
  huge->Set<int64_t>(fake.layout().unicode_length, kMaxUnicodeLength + 1);
  EXPECT_EQ(Read(fake, huge), "<false>");
  if (fake.layout().state_ready_mask != 0) {
    EXPECT_EQ(Read(fake, fake.Unicode({'a'}, 1, true, /*ready=*/false)),
              "<false>");
  }
}

TEST_P(ObjectAccessTest, CodeIdentTracksNameFileAndFirstLine) {
  FakeInterpreter fake(*GetParam());
  const FrameLayout& layout = fake.layout();
  FakeBlock* code = fake.Code("f", 10);
  const uint32_t ident = CodeIdent(layout, code);
  EXPECT_EQ(CodeIdent(layout, code), ident);

  FakeBlock* copy = fake.New();
  *copy = *code;  // same fields at another address
  EXPECT_EQ(CodeIdent(layout, copy), ident);

  copy->Set<int32_t>(layout.code_firstlineno, 11);
  EXPECT_NE(CodeIdent(layout, copy), ident);
  *copy = *code;
  copy->Set<const void*>(layout.code_name, fake.Ascii("f"));  // new object
  EXPECT_NE(CodeIdent(layout, copy), ident);
  *copy = *code;
  copy->Set<const void*>(layout.code_filename, fake.Ascii("other.py"));
  EXPECT_NE(CodeIdent(layout, copy), ident);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, ObjectAccessTest,
    ::testing::Values(LayoutFor(9), LayoutFor(12)),
    [](const ::testing::TestParamInfo<const FrameLayout*>& info) {
      return info.param != nullptr
                 ? "Cpython3_" + std::to_string(info.param->minor)
                 : "Missing" + std::to_string(info.index);
    });

TEST(PlausiblePointerTest, RejectsNullLowMisalignedAndHighAddresses) {
  alignas(8) static char storage[16];
  EXPECT_TRUE(IsPlausiblePointer(storage));
  EXPECT_FALSE(IsPlausiblePointer(storage + 1));
  EXPECT_FALSE(IsPlausiblePointer(nullptr));
  EXPECT_FALSE(IsPlausiblePointer(reinterpret_cast<void*>(0x100)));
  EXPECT_FALSE(
      IsPlausiblePointer(reinterpret_cast<void*>(0xFFFF800000000000ULL)));
}

}  // namespace
}  // namespace deepcontext::python

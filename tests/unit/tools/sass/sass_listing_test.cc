#include "tools/sass/sass_listing.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace deepcontext::sass {
namespace {

std::string ReadFixture(const std::string& name) {
  std::ifstream in(std::string(DC_SASS_FIXTURES) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(SassListing, ReadsEachFunctionOfNvdisasmOutput) {
  const SassListing listing = SassListing::Parse(ReadFixture("scale_add.sass.txt"));
  EXPECT_EQ(listing.function_count(), 2u);
  ASSERT_TRUE(listing.HasFunction("scale_add"));
  ASSERT_TRUE(listing.HasFunction("_Z6squarePfi"));
  ASSERT_NE(listing.Find("scale_add", 0xd0), nullptr);
  EXPECT_EQ(*listing.Find("scale_add", 0xd0), "LDG.E.128.CONSTANT R8, desc[UR4][R2.64]");
  EXPECT_EQ(*listing.Find("scale_add", 0x70), "@P0 EXIT");
  EXPECT_EQ(*listing.Find("scale_add", 0x150), "BRA `(.L_x_1)");
  // The same offset in the other function is that function's.
  EXPECT_EQ(*listing.Find("_Z6squarePfi", 0xd0), "STG.E desc[UR4][R2.64], R5");
  EXPECT_EQ(listing.Find("scale_add", 0x200), nullptr);  // past the end
  EXPECT_EQ(listing.Find("scale_add", 0xd8), nullptr);   // not an instruction
  EXPECT_EQ(listing.Find("no_such_kernel", 0), nullptr);
}

TEST(SassListing, DropsEncodingsBracesAndExtraSpaces) {
  const SassListing listing = SassListing::Parse(
      "\t.section\t.text.k,\"ax\",@progbits\n"
      "        /*0000*/                   LDC R1, c[0x0][0x28] ;"
      "                 /* 0x00000a00ff017b82 */\n"
      "                                                                  "
      "/* 0x000fe20000000800 */\n"
      "        /*0008*/    {         IADD32I R1, R1, -0x8 ;       /* 0x1c0fffffff870101 */\n"
      "        /*0010*/                   MOV   R2,    R3 ;\n"
      "        /*zz*/                   NOT AN INSTRUCTION ;\n");
  EXPECT_EQ(*listing.Find("k", 0x0), "LDC R1, c[0x0][0x28]");
  EXPECT_EQ(*listing.Find("k", 0x8), "IADD32I R1, R1, -0x8");
  EXPECT_EQ(*listing.Find("k", 0x10), "MOV R2, R3");
}

TEST(SassListing, InstructionsBeforeAnyFunctionAndEmptyInputAreIgnored) {
  EXPECT_EQ(SassListing::Parse("").function_count(), 0u);
  const SassListing listing = SassListing::Parse("        /*0000*/ EXIT ;\n.text.k:\n");
  EXPECT_TRUE(listing.HasFunction("k"));
  EXPECT_EQ(listing.Find("k", 0), nullptr);
}

}  // namespace
}  // namespace deepcontext::sass

#include "tools/sass/instruction_sass.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "tests/unit/scratch_dir.h"
#include "tests/unit/tools/analysis/stall_profile.h"

namespace deepcontext::sass {
namespace {

namespace fs = std::filesystem;
using analysis::testing::kSassCubinName;
using analysis::testing::MakeSassProfile;

const std::string kFixtures = DC_SASS_FIXTURES;

// The instruction names under scale_add, by offset label.
std::map<std::string, std::string> InstructionNames(const format::Profile& profile) {
  std::map<std::string, std::string> out;
  for (const format::Node& node : profile.nodes) {
    if (node.kind != format::FrameKind::kGpuInstruction) continue;
    const std::string& name = profile.strings[node.name];
    out[SplitInstructionLabel(name).pc] = name;
  }
  return out;
}

class InstructionSassTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directory(root_ / "run.cubins");
    fs::copy_file(kFixtures + "/scale_add.cubin",
                  root_ / "run.cubins" / (std::string(kSassCubinName) + ".cubin"));
    profile_path_ = (root_ / "run.dctx").string();
  }

  ScratchDir scratch_;
  const fs::path root_ = scratch_.path();
  std::string profile_path_;
  Disassembler disassembler_{kFixtures + "/fake_toolkit/bin/nvdisasm"};
};

TEST_F(InstructionSassTest, SampledOffsetsGetTheirInstructions) {
  format::Profile profile = MakeSassProfile((root_ / "run.cubins").string());
  const SassAnnotation result = AnnotateInstructions(profile, profile_path_, &disassembler_);
  EXPECT_TRUE(result.notes.empty());
  EXPECT_EQ(result.instructions, 5u);
  EXPECT_EQ(result.annotated, 4u);
  const auto names = InstructionNames(profile);
  EXPECT_EQ(names.at("pc 0x00f0"), "pc 0x00f0: FFMA R11, R11, R0, 1");
  EXPECT_EQ(names.at("pc 0x00d0"), "pc 0x00d0: LDG.E.128.CONSTANT R8, desc[UR4][R2.64]");
  EXPECT_EQ(names.at("pc 0x0130"), "pc 0x0130: STG.E.128 desc[UR4][R4.64], R8");
  EXPECT_EQ(names.at("pc 0x0070"), "pc 0x0070: @P0 EXIT");
  EXPECT_EQ(names.at("pc 0x0400"), "pc 0x0400");  // past the kernel's end
  EXPECT_EQ(disassembler_.runs(), 1);
}

TEST_F(InstructionSassTest, AMovedRunFindsItsCubinsBesideTheProfile) {
  format::Profile profile = MakeSassProfile("/where/it/was/recorded/run.cubins");
  EXPECT_EQ(CubinDirectory(profile, profile_path_), (root_ / "run.cubins").string());
  const SassAnnotation result = AnnotateInstructions(profile, profile_path_, &disassembler_);
  EXPECT_EQ(result.annotated, 4u);
}

TEST_F(InstructionSassTest, WithoutNvdisasmOneNoteAndNothingChanges) {
  format::Profile profile = MakeSassProfile((root_ / "run.cubins").string());
  const format::Profile before = profile;
  const SassAnnotation result = AnnotateInstructions(profile, profile_path_, nullptr);
  ASSERT_EQ(result.notes.size(), 1u);
  EXPECT_EQ(result.notes[0], NvdisasmMissingNote());
  EXPECT_EQ(result.annotated, 0u);
  EXPECT_EQ(profile.strings, before.strings);
}

TEST_F(InstructionSassTest, AMissingCubinFolderIsANote) {
  format::Profile profile = MakeSassProfile("/where/it/was/recorded/gone.cubins");
  const SassAnnotation result = AnnotateInstructions(profile, profile_path_, &disassembler_);
  ASSERT_EQ(result.notes.size(), 1u);
  EXPECT_NE(result.notes[0].find("gone.cubins is missing"), std::string::npos);
  EXPECT_EQ(disassembler_.runs(), 0);
}

TEST_F(InstructionSassTest, ACubinNvdisasmRefusesIsANoteAndTheOthersStillCount) {
  format::Profile profile = MakeSassProfile((root_ / "run.cubins").string());
  for (auto& [key, value] : profile.metadata) {
    if (key == "gpu_samples_cubins") value = "00000000deadbeef " + value;
  }
  fs::copy_file(kFixtures + "/scale_add.cu", root_ / "run.cubins" / "00000000deadbeef.cubin");
  const SassAnnotation result = AnnotateInstructions(profile, profile_path_, &disassembler_);
  ASSERT_EQ(result.notes.size(), 1u);
  EXPECT_NE(result.notes[0].find("cubin 00000000deadbeef left out"), std::string::npos);
  EXPECT_EQ(result.annotated, 4u);
}

TEST_F(InstructionSassTest, AProfileWithoutKeptCubinsIsLeftAlone) {
  format::Profile profile = MakeSassProfile("");
  profile.metadata.clear();
  const SassAnnotation result = AnnotateInstructions(profile, profile_path_, nullptr);
  EXPECT_TRUE(result.notes.empty());
  EXPECT_EQ(result.annotated, 0u);
}

TEST(SplitInstructionLabel, SeparatesTheOffsetFromTheSass) {
  EXPECT_EQ(SplitInstructionLabel("pc 0x00d0: LDG.E.128 R8, [R2.64]").pc, "pc 0x00d0");
  EXPECT_EQ(SplitInstructionLabel("pc 0x00d0: LDG.E.128 R8, [R2.64]").sass,
            "LDG.E.128 R8, [R2.64]");
  EXPECT_EQ(SplitInstructionLabel("pc 0x00d0").sass, "");
  EXPECT_EQ(SplitInstructionLabel("module: forward").pc, "module: forward");
}

}  // namespace
}  // namespace deepcontext::sass

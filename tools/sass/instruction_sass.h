// SASS text on the instruction nodes (`pc 0x<offset>`, format kind 13) of a
// profile recorded with `deepcontext run --gpu-samples`: the runtime keeps
// the cubins of the sampled kernels beside the profile (metadata
// gpu_samples_cubin_dir and gpu_samples_cubins); each instruction node
// under kernel K becomes `pc 0x0080: LDG.E.128 R4, desc[UR4][R2.64]`, the
// instruction at that offset of K in nvdisasm's listing of those cubins.
#pragma once

#include <string>
#include <vector>

#include "format/profile_data.h"
#include "tools/sass/disassembler.h"

namespace deepcontext::sass {

// What the annotation did, for the command's notes.
struct SassAnnotation {
  size_t instructions = 0;  // instruction nodes seen
  size_t annotated = 0;     // of those, given their SASS text
  std::vector<std::string> notes;  // one line each: why some were left out
};

// The cubin folder of a profile read from `profile_path`: the folder its
// metadata names when it exists, else the folder of that name beside the
// profile (moved together); "" when the profile names none.
std::string CubinDirectory(const format::Profile& profile, const std::string& profile_path);

// Renames the instruction nodes of `profile` whose SASS is found.
// `disassembler` null, or without nvdisasm and without the listings kept
// beside the cubins: one note when the profile has cubins to disassemble.
// Profiles without instruction nodes or kept cubins are left as they are,
// with no note.
SassAnnotation AnnotateInstructions(format::Profile& profile, const std::string& profile_path,
                                    Disassembler* disassembler);

// "pc 0x0080: LDG.E.128 R4, [R2.64]" -> "pc 0x0080" and the SASS text ("" when
// the label has none).
struct InstructionLabel {
  std::string pc;
  std::string sass;
};
InstructionLabel SplitInstructionLabel(const std::string& name);

}  // namespace deepcontext::sass

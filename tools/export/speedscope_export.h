// The "speedscope" export format: speedscope's file format
// (https://www.speedscope.app/file-format-schema.json), one sampled profile
// per metric, which speedscope.app opens directly.
#pragma once

#include <string>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::exporter {

// Returns tree as a speedscope document. Each metric with a nonzero total
// becomes one "sampled" profile in which every calling context with an
// exclusive value is one sample (its stack, root excluded) weighted by that
// value; speedscope's units are "nanoseconds" for ns, "bytes" for bytes and
// "none" otherwise. Frames are shared and carry file and line. The default
// metric's profile comes first. May throw std::bad_alloc.
std::string RenderSpeedscope(const analysis::ProfileTree& tree);

}  // namespace deepcontext::exporter

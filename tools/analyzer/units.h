// Number formatting shared by rule titles and the text output.
#pragma once

#include <string>

namespace deepcontext::analyzer {

// "1.25 s", "830 ms", "12.0 us", "450 ns".
std::string FormatDuration(double ns);
// "64.0 MiB", "12.0 KiB", "512 B".
std::string FormatBytes(double bytes);
// "12", "1.5k" style counts: whole numbers below 10000, else 1 decimal k/M.
std::string FormatCount(double count);
// "3.4" (one decimal).
std::string FormatRatio(double ratio);
// "12.3%".
std::string FormatPercent(double share);

}  // namespace deepcontext::analyzer

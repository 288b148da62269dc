// Turning metric values into short human-readable strings.
#pragma once

#include <string>
#include <string_view>

namespace deepcontext::report {

// Formats value in the metric's unit with about three significant digits:
// time units ("ns", "us", "ms", "s") pick s/ms/us/ns automatically
// ("8.21 s", "45.2 ms"), "bytes" picks B/KiB/MiB/GiB/TiB, "count" prints a
// rounded integer with thousands separators ("1,234,567"). Other units print
// the number followed by the unit. Zero is always "0".
std::string FormatValue(double value, std::string_view unit);

// Formats a rounded non-negative integer with thousands separators.
std::string FormatCount(double value);

// Formats part/total as a percentage with one decimal ("12.5%"); "-" when
// total is zero.
std::string FormatPercent(double part, double total);

}  // namespace deepcontext::report

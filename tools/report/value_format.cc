#include "tools/report/value_format.h"

#include <cmath>
#include <cstdio>

namespace deepcontext::report {

namespace {

// Values that would round up to 1000 of a unit (999.96 ms) are shown in the
// next larger unit instead ("1.00 s").
constexpr double kPromote = 0.9995;

struct Scale {
  double factor;
  const char* suffix;
};

// Prints value/factor with three significant digits and the suffix.
std::string Scaled(double value, const Scale& scale) {
  double x = value / scale.factor;
  double magnitude = std::fabs(x);
  const char* format = magnitude >= 99.95   ? "%.0f %s"
                       : magnitude >= 9.995 ? "%.1f %s"
                                            : "%.2f %s";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, x, scale.suffix);
  return buffer;
}

std::string FormatTime(double ns) {
  static constexpr Scale kScales[] = {
      {1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"}};
  for (const Scale& scale : kScales) {
    if (std::fabs(ns) >= scale.factor * kPromote) return Scaled(ns, scale);
  }
  return Scaled(ns, kScales[3]);
}

std::string FormatBytes(double bytes) {
  static constexpr Scale kScales[] = {{1024.0 * 1024 * 1024 * 1024, "TiB"},
                                      {1024.0 * 1024 * 1024, "GiB"},
                                      {1024.0 * 1024, "MiB"},
                                      {1024.0, "KiB"}};
  for (const Scale& scale : kScales) {
    if (std::fabs(bytes) >= scale.factor * kPromote) {
      return Scaled(bytes, scale);
    }
  }
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.0f B", bytes);
  return buffer;
}

}  // namespace

std::string FormatCount(double value) {
  char digits[64];
  std::snprintf(digits, sizeof(digits), "%.0f", std::fabs(value));
  std::string plain = digits;
  std::string grouped;
  for (size_t i = 0; i < plain.size(); ++i) {
    if (i > 0 && (plain.size() - i) % 3 == 0) grouped += ',';
    grouped += plain[i];
  }
  return (value <= -0.5 ? "-" : "") + grouped;
}

std::string FormatValue(double value, std::string_view unit) {
  if (value == 0) return "0";
  if (unit == "ns") return FormatTime(value);
  if (unit == "us") return FormatTime(value * 1e3);
  if (unit == "ms") return FormatTime(value * 1e6);
  if (unit == "s") return FormatTime(value * 1e9);
  if (unit == "bytes" || unit == "B") return FormatBytes(value);
  if (unit == "count" || unit.empty()) return FormatCount(value);
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.3g", value);
  return std::string(buffer) + " " + std::string(unit);
}

std::string FormatPercent(double part, double total) {
  if (total == 0) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f%%", 100.0 * part / total);
  return buffer;
}

}  // namespace deepcontext::report

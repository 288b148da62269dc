#include "tools/analyzer/units.h"

#include <cmath>
#include <cstdio>

namespace deepcontext::analyzer {

namespace {

std::string Printf(const char* format, double value, const char* unit) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value, unit);
  return buffer;
}

// Three significant digits: "1.25", "12.5", "125".
std::string Scaled(double value, const char* unit) {
  if (value >= 100) return Printf("%.0f %s", value, unit);
  if (value >= 10) return Printf("%.1f %s", value, unit);
  return Printf("%.2f %s", value, unit);
}

}  // namespace

std::string FormatDuration(double ns) {
  if (ns >= 1e9) return Scaled(ns / 1e9, "s");
  if (ns >= 1e6) return Scaled(ns / 1e6, "ms");
  if (ns >= 1e3) return Scaled(ns / 1e3, "us");
  return Printf("%.0f %s", ns, "ns");
}

std::string FormatBytes(double bytes) {
  if (bytes >= 1024.0 * 1024 * 1024)
    return Scaled(bytes / (1024.0 * 1024 * 1024), "GiB");
  if (bytes >= 1024.0 * 1024) return Scaled(bytes / (1024.0 * 1024), "MiB");
  if (bytes >= 1024.0) return Scaled(bytes / 1024.0, "KiB");
  return Printf("%.0f %s", bytes, "B");
}

std::string FormatCount(double count) {
  if (count < 10000) {
    if (std::fabs(count - std::round(count)) < 0.05) {
      return Printf("%.0f%s", count, "");
    }
    return Printf("%.1f%s", count, "");
  }
  if (count < 1e6) return Printf("%.1f%s", count / 1e3, "k");
  return Printf("%.1f%s", count / 1e6, "M");
}

std::string FormatRatio(double ratio) { return Printf("%.1f%s", ratio, ""); }

std::string FormatPercent(double share) {
  return Printf("%.1f%s", share * 100, "%");
}

}  // namespace deepcontext::analyzer

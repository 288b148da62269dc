// One piece of advice the analyzer gives: what it saw (evidence against a
// threshold), where (the calling context), what fixing it could save, and
// what to change. The JSON form (findings_json.h) is a stable interface for
// scripts and the GUI.
#pragma once

#include <string>
#include <vector>

#include "tools/analysis/profile_tree.h"

namespace deepcontext::analyzer {

enum class Severity { kLow = 0, kMedium = 1, kHigh = 2 };

// "low", "medium", "high".
const char* SeverityName(Severity severity);

// One measured value compared with the threshold that made the rule fire,
// e.g. {"gpu_busy_share", 0.31, "", "<", 0.5}.
struct Evidence {
  std::string metric;
  double value = 0;
  std::string unit;        // "ns", "bytes", "ratio", "count", ...
  std::string comparator;  // "<", ">=", ...
  double threshold = 0;
};

// What fixing the finding could save, as a range of nanoseconds of the
// profiled time (basis_ns); low == high when the estimate is exact enough.
// Memory findings save bytes instead: the device memory at the peak that
// the fix could release (bytes), and the peak it is a share of.
struct Benefit {
  double low_ns = 0;
  double high_ns = 0;
  double basis_ns = 0;    // the time the saving is a share of
  std::string basis;      // "profiled wall time", "GPU busy time"
  std::string method;     // how the range was computed, one line
  double bytes = 0;       // memory findings: bytes at the peak
  double peak_bytes = 0;  // memory findings: the peak those bytes are in

  double ShareLow() const { return basis_ns > 0 ? low_ns / basis_ns : 0; }
  double ShareHigh() const { return basis_ns > 0 ? high_ns / basis_ns : 0; }
  double BytesShare() const { return peak_bytes > 0 ? bytes / peak_bytes : 0; }
};

// Where a finding sits, from the user's source line down to the kernel.
struct FindingContext {
  analysis::NodeIndex node = 0;  // ProfileTree index of the blamed node
  std::string file;              // the user's source file, "" when unknown
  uint32_t line = 0;
  std::string function;           // the Python function holding that line
  std::string op;                 // outermost framework operator, or ""
  std::string phase;              // "forward", "backward" or ""
  std::string kernel;             // GPU kernel / copy / sync name, or ""
  std::vector<std::string> path;  // display names from the root's child down
};

struct Finding {
  std::string rule_id;  // "host_device_sync", or "user.<name>" for user rules
  Severity severity = Severity::kLow;
  std::string title;  // one line: what is wrong
  FindingContext context;
  std::vector<Evidence> evidence;
  Benefit benefit;
  std::string suggestion;  // what to change, written for the user's code
  std::string example;     // one line of code, may be empty
};

// Severity from the benefit's upper share: high from 10 %, medium from 3 %.
Severity SeverityForShare(double share);

// Orders findings by estimated time benefit (upper then lower bound), then
// memory benefit, then rule id and node so the order is deterministic.
void RankFindings(std::vector<Finding>& findings);

}  // namespace deepcontext::analyzer

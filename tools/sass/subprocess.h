// Running a helper program (nvdisasm) from the offline tools: argument
// vector, no shell, its standard output captured, killed at a deadline.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "common/status.h"

namespace deepcontext::sass {

struct ProgramLimits {
  std::chrono::milliseconds timeout{60000};
  size_t max_output_bytes = size_t{512} << 20;
};

// Runs argv[0] (a path) with argv, standard input from /dev/null. Returns
// its standard output when it exits with status 0; otherwise an error
// naming the program and holding the first line of its standard error,
// its exit status or signal, or the timeout after which it was killed.
StatusOr<std::string> RunProgram(const std::vector<std::string>& argv,
                                           const ProgramLimits& limits);

}  // namespace deepcontext::sass

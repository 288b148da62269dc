// The width the report fits its lines to when --width is not given.
#pragma once

namespace deepcontext::cli {

// Width used when the output is not a terminal and COLUMNS is unset: wide
// enough for a tree of typical depth with its location column, and fixed so
// that a report piped to a file or another program reads the same on every
// machine.
inline constexpr int kDefaultReportWidth = 100;

// Returns the COLUMNS environment variable when it holds a positive number
// (the user's explicit choice), else the width of the terminal fd is
// attached to, else kDefaultReportWidth.
int TerminalWidth(int fd);

}  // namespace deepcontext::cli

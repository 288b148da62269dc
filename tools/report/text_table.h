// A plain-text table with aligned columns, sized by display width so that
// multi-byte tree guides line up.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace deepcontext::report {

// Returns the number of terminal columns text occupies, counting each UTF-8
// code point as one column.
size_t DisplayWidth(std::string_view text);

// Cuts text to at most width columns, ending with "..." when anything was
// removed. Never splits a UTF-8 code point.
std::string TruncateToWidth(std::string_view text, size_t width);

// Accumulates rows and renders them with every column padded to its widest
// cell. Columns are separated by two spaces; lines carry no trailing blanks.
class TextTable {
 public:
  enum class Align { kLeft, kRight };

  // One column: its header and alignment. max_width > 0 truncates longer
  // cells (header excluded) to that many columns.
  struct Column {
    std::string header;
    Align align = Align::kRight;
    size_t max_width = 0;
  };

  explicit TextTable(std::vector<Column> columns);

  // Adds a row; missing trailing cells are empty, extra cells are ignored.
  void AddRow(std::vector<std::string> cells);

  // Sets the truncation width of column index (0 = none).
  void SetMaxWidth(size_t index, size_t max_width);

  // Caps column so that lines fit in line_width columns, but never below
  // min_width: a name cut to a few characters helps nobody. 0 = no cap.
  void FitToWidth(size_t column, size_t line_width, size_t min_width = 16);

  // Returns the width every column would get, after truncation.
  std::vector<size_t> ColumnWidths() const;

  // Renders the header line, then each row, each followed by '\n'. With
  // bold_header the header line is wrapped in ANSI bold.
  std::string Render(bool bold_header = false) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace deepcontext::report

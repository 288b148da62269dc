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

// Shortens text to at most width columns by replacing its middle with
// "...", keeping the first keep_bytes bytes (tree guides) whole: long C++
// and kernel names differ at both ends (namespace, template arguments), so
// both stay readable. Falls back to TruncateToWidth when the kept prefix
// leaves no room. Never splits a UTF-8 code point.
std::string EllipsizeMiddle(std::string_view text, size_t width,
                            size_t keep_bytes = 0);

// Accumulates rows and renders them with every column padded to its widest
// cell. Columns are separated by two spaces; lines carry no trailing blanks.
class TextTable {
 public:
  enum class Align { kLeft, kRight };

  // One column: its header and alignment. max_width > 0 shortens longer
  // cells (header excluded) to that many columns; min_shown > 0 keeps that
  // many columns of a cell after its kept prefix whatever max_width says
  // (a name column: a deeply indented row then overflows alone rather than
  // show nothing of its name).
  // How a cell is shortened: (cell, width, kept prefix bytes) -> text.
  using Shortener = std::string (*)(std::string_view, size_t, size_t);

  struct Column {
    std::string header;
    Align align = Align::kRight;
    size_t max_width = 0;
    size_t min_shown = 0;
    // EllipsizeMiddle when null.
    Shortener shorten = nullptr;
  };

  explicit TextTable(std::vector<Column> columns);

  // Adds a row; missing trailing cells are empty, extra cells are ignored.
  // kept_prefix[i] bytes at the start of cell i (a tree guide) are never
  // removed when the cell is shortened; the rest loses its middle.
  void AddRow(std::vector<std::string> cells,
              std::vector<size_t> kept_prefix = {});

  // Sets the truncation width of column index (0 = none).
  void SetMaxWidth(size_t index, size_t max_width);

  // Caps column so that lines fit in line_width columns, but never below
  // min_width: a name cut to a few characters helps nobody. 0 = no cap.
  void FitToWidth(size_t column, size_t line_width, size_t min_width = 16);

  // One step of fitting: shrink column, but not below floor columns.
  struct Shrink {
    size_t column;
    size_t floor;
  };

  // Caps columns, step by step in the given order, until lines fit in
  // line_width columns or every step reached its floor (see
  // Column::min_shown for the rows that may still overflow).
  void FitToWidth(size_t line_width, const std::vector<Shrink>& steps);

  // A good Column::min_shown for names: most operator and Python function
  // names fit whole, and a shortened C++ name still shows both ends.
  static constexpr size_t kMinShownText = 24;

  // Returns the width every column would get, after truncation.
  std::vector<size_t> ColumnWidths() const;

  // Renders the header line, then each row, each followed by '\n'. With
  // bold_header the header line is wrapped in ANSI bold.
  std::string Render(bool bold_header = false) const;

 private:
  struct Row {
    std::vector<std::string> cells;
    std::vector<size_t> kept_prefix;  // one per cell
  };

  // The width cell i of row gets under the column's cap.
  size_t CellWidth(const Row& row, size_t i) const;

  std::vector<Column> columns_;
  std::vector<Row> rows_;
};

}  // namespace deepcontext::report

#include "tools/report/text_table.h"

#include <algorithm>
#include <utility>

namespace deepcontext::report {

namespace {

bool IsContinuationByte(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

constexpr std::string_view kEllipsis = "...";

}  // namespace

size_t DisplayWidth(std::string_view text) {
  size_t width = 0;
  for (char c : text) {
    if (!IsContinuationByte(c)) ++width;
  }
  return width;
}

std::string TruncateToWidth(std::string_view text, size_t width) {
  if (DisplayWidth(text) <= width) return std::string(text);
  if (width <= kEllipsis.size()) return std::string(kEllipsis.substr(0, width));
  size_t keep = width - kEllipsis.size();
  size_t end = 0;
  size_t columns = 0;
  while (end < text.size()) {
    if (!IsContinuationByte(text[end])) {
      if (columns == keep) break;
      ++columns;
    }
    ++end;
  }
  return std::string(text.substr(0, end)) + std::string(kEllipsis);
}

namespace {

// Byte offset just past the first `columns` code points of text.
size_t BytesOfColumns(std::string_view text, size_t columns) {
  size_t end = 0;
  size_t seen = 0;
  while (end < text.size()) {
    if (!IsContinuationByte(text[end])) {
      if (seen == columns) break;
      ++seen;
    }
    ++end;
  }
  return end;
}

}  // namespace

std::string EllipsizeMiddle(std::string_view text, size_t width,
                            size_t keep_bytes) {
  if (DisplayWidth(text) <= width) return std::string(text);
  keep_bytes = std::min(keep_bytes, text.size());
  std::string_view kept = text.substr(0, keep_bytes);
  std::string_view rest = text.substr(keep_bytes);
  const size_t kept_width = DisplayWidth(kept);
  // Fewer than two characters on each side of "..." says nothing.
  if (width < kept_width + kEllipsis.size() + 4) {
    return TruncateToWidth(text, width);
  }
  const size_t room = width - kept_width - kEllipsis.size();
  const size_t tail_columns = room / 2;
  const size_t head_columns = room - tail_columns;
  const size_t head_end = BytesOfColumns(rest, head_columns);
  const size_t rest_width = DisplayWidth(rest);
  const size_t tail_start = BytesOfColumns(rest, rest_width - tail_columns);
  return std::string(kept) + std::string(rest.substr(0, head_end)) +
         std::string(kEllipsis) + std::string(rest.substr(tail_start));
}

TextTable::TextTable(std::vector<Column> columns)
    : columns_(std::move(columns)) {}

void TextTable::AddRow(std::vector<std::string> cells,
                       std::vector<size_t> kept_prefix) {
  cells.resize(columns_.size());
  kept_prefix.resize(columns_.size(), 0);
  rows_.push_back({std::move(cells), std::move(kept_prefix)});
}

void TextTable::SetMaxWidth(size_t index, size_t max_width) {
  if (index < columns_.size()) columns_[index].max_width = max_width;
}

void TextTable::FitToWidth(size_t column, size_t line_width, size_t min_width) {
  FitToWidth(line_width, {{column, min_width}});
}

void TextTable::FitToWidth(size_t line_width,
                           const std::vector<Shrink>& steps) {
  if (line_width == 0) return;
  for (const Shrink& step : steps) {
    if (step.column < columns_.size()) columns_[step.column].max_width = 0;
  }
  auto line_of = [](const std::vector<size_t>& widths) {
    size_t total = 2 * (widths.size() - 1);
    for (size_t width : widths) total += width;
    return total;
  };
  for (const Shrink& step : steps) {
    if (step.column >= columns_.size()) continue;
    std::vector<size_t> widths = ColumnWidths();
    // A lower cap may shrink the column by less than asked (rows keep
    // kMinShownText of their text): lower it until the line fits, the floor
    // is reached, or the column stops shrinking.
    while (line_of(widths) > line_width && widths[step.column] > step.floor) {
      const size_t current = widths[step.column];
      const size_t excess = line_of(widths) - line_width;
      columns_[step.column].max_width =
          current - std::min(excess, current - step.floor);
      widths = ColumnWidths();
    }
    if (line_of(widths) <= line_width) return;
  }
}

size_t TextTable::CellWidth(const Row& row, size_t i) const {
  size_t width = DisplayWidth(row.cells[i]);
  const Column& column = columns_[i];
  if (column.max_width == 0) return width;
  if (column.min_shown == 0) return std::min(width, column.max_width);
  const size_t kept = DisplayWidth(
      std::string_view(row.cells[i]).substr(0, row.kept_prefix[i]));
  return std::min(width, std::max(column.max_width, kept + column.min_shown));
}

std::vector<size_t> TextTable::ColumnWidths() const {
  std::vector<size_t> widths;
  for (const Column& column : columns_) {
    widths.push_back(DisplayWidth(column.header));
  }
  for (const Row& row : rows_) {
    for (size_t i = 0; i < columns_.size(); ++i) {
      // The column follows its cap; a deep row whose guide leaves less than
      // min_shown of its name overflows alone, so that a deep tree does not
      // widen every row.
      size_t width = DisplayWidth(row.cells[i]);
      if (columns_[i].max_width > 0) {
        width = std::min(width, columns_[i].max_width);
      }
      widths[i] = std::max(widths[i], width);
    }
  }
  return widths;
}

std::string TextTable::Render(bool bold_header) const {
  std::vector<size_t> widths = ColumnWidths();
  auto render_line = [&](const std::vector<std::string>& cells,
                         const Row* row) {
    std::string line;
    for (size_t i = 0; i < columns_.size(); ++i) {
      std::string cell = cells[i];
      if (row != nullptr && columns_[i].max_width > 0) {
        Shortener shorten = columns_[i].shorten != nullptr ? columns_[i].shorten
                                                           : &EllipsizeMiddle;
        cell = shorten(cell, CellWidth(*row, i), row->kept_prefix[i]);
      }
      std::string padding(widths[i] - std::min(widths[i], DisplayWidth(cell)),
                          ' ');
      if (i > 0) line += "  ";
      if (columns_[i].align == Align::kRight) {
        line += padding + cell;
      } else {
        line += cell + padding;
      }
    }
    line.erase(line.find_last_not_of(' ') + 1);
    return line + "\n";
  };
  std::vector<std::string> headers;
  for (const Column& column : columns_) headers.push_back(column.header);
  std::string out = render_line(headers, nullptr);
  if (bold_header)
    out = "\x1b[1m" + out.substr(0, out.size() - 1) + "\x1b[0m\n";
  for (const Row& row : rows_) out += render_line(row.cells, &row);
  return out;
}

}  // namespace deepcontext::report

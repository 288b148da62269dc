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

TextTable::TextTable(std::vector<Column> columns)
    : columns_(std::move(columns)) {}

void TextTable::AddRow(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

void TextTable::SetMaxWidth(size_t index, size_t max_width) {
  if (index < columns_.size()) columns_[index].max_width = max_width;
}

void TextTable::FitToWidth(size_t column, size_t line_width, size_t min_width) {
  if (line_width == 0 || column >= columns_.size()) return;
  columns_[column].max_width = 0;
  std::vector<size_t> widths = ColumnWidths();
  size_t others = 0;
  for (size_t i = 0; i < widths.size(); ++i) {
    if (i != column) others += widths[i] + 2;
  }
  columns_[column].max_width =
      line_width > others + min_width ? line_width - others : min_width;
}

std::vector<size_t> TextTable::ColumnWidths() const {
  std::vector<size_t> widths;
  for (const Column& column : columns_) {
    widths.push_back(DisplayWidth(column.header));
  }
  for (const auto& row : rows_) {
    for (size_t i = 0; i < columns_.size(); ++i) {
      size_t width = DisplayWidth(row[i]);
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
  auto render_line = [&](const std::vector<std::string>& cells, bool truncate) {
    std::string line;
    for (size_t i = 0; i < columns_.size(); ++i) {
      std::string cell = cells[i];
      if (truncate && columns_[i].max_width > 0) {
        cell = TruncateToWidth(cell, columns_[i].max_width);
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
  std::string out = render_line(headers, false);
  if (bold_header)
    out = "\x1b[1m" + out.substr(0, out.size() - 1) + "\x1b[0m\n";
  for (const auto& row : rows_) out += render_line(row, true);
  return out;
}

}  // namespace deepcontext::report

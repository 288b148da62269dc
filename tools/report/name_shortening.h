// Shortening frame names to a column width.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace deepcontext::report {

// Replaces the argument list of every outermost C++ template with "<...>"
// ("cudnn::bn_bw_kernel<float, 512>" -> "cudnn::bn_bw_kernel<...>"). Only
// a '<' right after an identifier opens a template, so Python names such as
// "<module>" or "f.<locals>.g" are left alone, as is an unbalanced '<'.
std::string CollapseTemplateArguments(std::string_view name);

// Shortens a name cell (kept_bytes of tree guide, then the name) to width
// columns: first by collapsing template arguments, which keeps the part a
// reader recognizes, then by removing the middle (EllipsizeMiddle).
std::string ShortenName(std::string_view cell, size_t width, size_t kept_bytes);

// Shortens a "dir/file.py:line" cell to width columns by dropping leading
// directories ("examples/train.py:63" -> "train.py:63"); what still does not
// fit loses its middle. Location cells have no kept prefix.
std::string ShortenLocation(std::string_view cell, size_t width,
                            size_t kept_bytes);

}  // namespace deepcontext::report

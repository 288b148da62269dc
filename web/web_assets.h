// The built front end (web/src, bundled by Vite at build time) embedded in
// the binary, so `deepcontext view` and the HTML export need no files
// installed beside it.
#pragma once

#include <string_view>

namespace deepcontext::web {

// The bundled application script (an IIFE).
std::string_view AppScript();

// The bundled stylesheet.
std::string_view AppStyle();

}  // namespace deepcontext::web

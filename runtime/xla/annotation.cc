#include "runtime/xla/annotation.h"

#include <cctype>
#include <vector>

namespace deepcontext::xla {
namespace {

// "key=value" pairs separated by commas; a comma not followed by
// "identifier=" belongs to the value (JAX scope names may hold commas).
std::vector<std::pair<std::string_view, std::string_view>> SplitPairs(
    std::string_view body) {
  std::vector<std::pair<std::string_view, std::string_view>> pairs;
  auto starts_pair = [&](size_t at) {
    size_t i = at;
    while (i < body.size() && (std::islower(static_cast<unsigned char>(body[i])) ||
                               body[i] == '_')) {
      ++i;
    }
    return i > at && i < body.size() && body[i] == '=';
  };
  size_t start = 0;
  while (start < body.size()) {
    size_t end = start;
    while (end < body.size() && !(body[end] == ',' && starts_pair(end + 1))) ++end;
    const std::string_view piece = body.substr(start, end - start);
    const size_t eq = piece.find('=');
    if (eq != std::string_view::npos) {
      pairs.emplace_back(piece.substr(0, eq), piece.substr(eq + 1));
    }
    start = end + 1;
  }
  return pairs;
}

bool ParseUnsigned(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = value;
  return true;
}

}  // namespace

Annotation ParseAnnotation(std::string_view message) {
  Annotation a;
  const size_t colon = message.find(":#");
  if (colon == std::string_view::npos || message.size() < colon + 3 ||
      message.back() != '#') {
    return a;
  }
  const std::string_view type = message.substr(0, colon);
  const std::string_view body = message.substr(colon + 2, message.size() - colon - 3);
  for (const auto& [key, value] : SplitPairs(body)) {
    if (key == "hlo_module" || key == "module") {
      a.module.assign(value);
    } else if (key == "program_id") {
      ParseUnsigned(value, &a.program_id);
    } else if (key == "name") {
      a.op_name.assign(value);
    } else if (key == "hlo_op") {
      a.hlo_op.assign(value);
    }
  }
  if (type == "Thunk") {
    if (!a.hlo_op.empty()) a.kind = AnnotationKind::kThunk;
  } else if (type == "XlaModule") {
    a.kind = a.program_id != 0 ? AnnotationKind::kModule : AnnotationKind::kCompile;
  } else if (type.substr(0, 3) == "Xla") {
    // XlaCompile, XlaPass, XlaEmitGpuAsm, XlaAutotuner...: compiler work.
    a.kind = AnnotationKind::kCompile;
  }
  return a;
}

}  // namespace deepcontext::xla

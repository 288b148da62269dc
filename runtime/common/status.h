// A small success-or-error result for the injected runtime: an error is one
// human-readable line, success carries no text, so no caller has to know
// that an empty string means success. Errors the user can act on (a GPU
// that refuses counters to non-administrators) say so through their code,
// so callers can warn differently from a plain failure.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace deepcontext {

class Status {
 public:
  enum class Code { kOk, kError, kPermissionDenied, kUnsupported };

  static Status Ok() { return Status(); }
  static Status Error(std::string message, Code code = Code::kError) {
    Status status;
    status.code_ = code == Code::kOk ? Code::kError : code;
    status.message_ = std::move(message);
    return status;
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  // The one-line message; "" when ok().
  const std::string& message() const { return message_; }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

}  // namespace deepcontext

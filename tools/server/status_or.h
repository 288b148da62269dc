// A value or the reason there is none, for the server's fallible steps.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace deepcontext::server {

// Why a request could not be answered; each maps to one HTTP status.
enum class ErrorCode {
  kNotFound,      // 404: no such profile, or a file the profile does not name
  kBadRequest,    // 400: a malformed parameter
  kUnreadable,    // 422: the profile file could not be read
};

struct Error {
  ErrorCode code;
  std::string message;  // one line for the user
};

template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Error error) : state_(std::move(error)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(state_); }
  const T& value() const { return std::get<T>(state_); }
  T& value() { return std::get<T>(state_); }
  const Error& error() const { return std::get<Error>(state_); }

 private:
  std::variant<T, Error> state_;
};

// HTTP status for code.
inline int HttpStatus(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kBadRequest:
      return 400;
    case ErrorCode::kUnreadable:
      return 422;
  }
  return 500;
}

}  // namespace deepcontext::server

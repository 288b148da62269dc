// A small error-or-value type for the analyzer's fallible steps.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace deepcontext::analyzer {

class Status {
 public:
  static Status Ok() { return Status(); }
  static Status Error(std::string message) {
    return Status(std::move(message));
  }
  bool ok() const { return message_.empty(); }
  const std::string& message() const { return message_; }

 private:
  Status() = default;
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::string message_;
};

template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : value_(std::move(status)) {}  // NOLINT
  bool ok() const { return std::holds_alternative<T>(value_); }
  const T& value() const { return std::get<T>(value_); }
  T& value() { return std::get<T>(value_); }
  std::string error() const {
    return ok() ? "" : std::get<Status>(value_).message();
  }

 private:
  std::variant<T, Status> value_;
};

}  // namespace deepcontext::analyzer

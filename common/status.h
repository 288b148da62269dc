// A small success-or-error result for every layer (the injected runtime,
// the profile format, the offline tools): an error is one human-readable
// line, success carries no text, so no caller has to know that an empty
// string means success. Header-only and dependent on the standard library
// alone, so that the runtime can use it without linking anything. Errors
// the user can act on (a GPU that refuses counters to non-administrators)
// say so through their code, so callers can warn differently from a plain
// failure. StatusOr<T> is the same for steps that produce something: a
// value, or the error saying why there is none. The view server's StatusOr
// (tools/server/status_or.h) differs on purpose: its errors carry an HTTP
// status.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <type_traits>
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

// A value (status() is then Ok()) or a non-ok Status saying why there is
// none: ok() always means value() is there. No exceptions: value() on an
// error is a bug (asserted in debug builds), so callers test ok() first.
template <typename T>
class StatusOr {
  static_assert(!std::is_same_v<T, Status>, "a Status alone says it all");

 public:
  // Implicit, so that a function returns a value or an error alike. An ok
  // Status has no value to give: it becomes an error rather than a success
  // whose value() would be empty.
  StatusOr(T value) : value_(std::move(value)) {}
  StatusOr(Status status)
      : status_(status.ok() ? Status::Error("no value: an ok Status was given instead")
                            : std::move(status)) {}

  bool ok() const { return value_.has_value(); }
  // Ok() when there is a value.
  const Status& status() const { return status_; }

  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace deepcontext

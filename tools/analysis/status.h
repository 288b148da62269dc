// A small success-or-error result for the offline tools (merge, diff,
// analyzer, CLI): an error is one human-readable line, success carries no
// text (Status) or a value (StatusOr<T>). The view server's StatusOr
// (tools/server/status_or.h) differs on purpose: its errors carry an HTTP
// status.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace deepcontext::analysis {

class Status {
 public:
  static Status Ok() { return Status(); }
  static Status Error(std::string message) {
    Status status;
    status.error_ = std::move(message);
    return status;
  }

  bool ok() const { return !error_.has_value(); }
  // The one-line message; "" when ok().
  const std::string& message() const {
    static const std::string kEmpty;
    return error_ ? *error_ : kEmpty;
  }

 private:
  std::optional<std::string> error_;
};

template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  // An ok Status has no value to give: it becomes an error, so that ok()
  // and status().ok() never disagree.
  StatusOr(Status status)  // NOLINT
      : status_(status.ok() ? Status::Error("no value: an ok Status was given instead")
                            : std::move(status)) {}

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace deepcontext::analysis

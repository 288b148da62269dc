// A success-or-error result for the command-line tools: an error carries
// one line of text for the user.
#pragma once

#include <string>
#include <utility>

namespace deepcontext::cli {

class Status {
 public:
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }

 private:
  Status() = default;
  explicit Status(std::string message)
      : failed_(true), message_(std::move(message)) {}

  bool failed_ = false;
  std::string message_;
};

}  // namespace deepcontext::cli

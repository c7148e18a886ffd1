// Errors as values. A Status is ok or carries a message that says what was wrong, where, and
// what to do; Result<T> is a value or a Status. Nothing in rankscope throws across layers.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace rankscope {

class Status {
 public:
  Status() = default;  // ok
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !message_.has_value(); }
  // The error message; empty for ok.
  const std::string& message() const {
    static const std::string kEmpty;
    return message_ ? *message_ : kEmpty;
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit
  static Result Error(std::string message) { return Result(Status::Error(std::move(message))); }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  // Requires ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace rankscope

// Returns the Status of `expr` from the enclosing function when it is an error.
#define RETURN_IF_ERROR(expr)                            \
  do {                                                   \
    ::rankscope::Status return_if_error_ = (expr);       \
    if (!return_if_error_.ok()) return return_if_error_; \
  } while (0)

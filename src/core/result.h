#pragma once
// `Result<T>`: a value or a human-readable error. Used for every expected failure (bad input,
// infeasible requests) so that exceptions never cross a layer boundary.

#include <string>
#include <utility>
#include <variant>

#include "core/check.h"

namespace gpufleet::core {

// What kind of failure an error is; an HTTP status follows from it, never from the message.
enum class ErrorCode {
  kInvalid,      // the input is wrong (names `field`)
  kNotFound,     // what was asked for does not exist (or is not the caller's to see)
  kForbidden,    // the caller may not do this
  kInfeasible,   // valid, but can never be satisfied here (a job no node can hold)
  kUnavailable,  // try again later (the store is busy, a peer is down)
  kInternal,     // a bug or a broken environment
};

struct Error {
  explicit Error(std::string message_text, ErrorCode error_code = ErrorCode::kInvalid,
        std::string field_name = "")
      : message(std::move(message_text)), code(error_code), field(std::move(field_name)) {}
  std::string message;  // says what is wrong, and what to do when that is not obvious
  ErrorCode code = ErrorCode::kInvalid;
  std::string field;  // the input field at fault, or ""
};

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  T& value() & {
    GPUFLEET_CHECK(ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    GPUFLEET_CHECK(ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    GPUFLEET_CHECK(ok());
    return std::get<T>(std::move(v_));
  }
  const std::string& error() const {
    GPUFLEET_CHECK(!ok());
    return std::get<Error>(v_).message;
  }
  // The whole error: its code and field too.
  const Error& failure() const {
    GPUFLEET_CHECK(!ok());
    return std::get<Error>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

}  // namespace gpufleet::core

#pragma once
// `Result<T>`: a value or a human-readable error. Used for every expected failure (bad input,
// infeasible requests) so that exceptions never cross a layer boundary.

#include <string>
#include <utility>
#include <variant>

#include "core/check.h"

namespace gpufleet::core {

struct Error {
  std::string message;
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

 private:
  std::variant<T, Error> v_;
};

}  // namespace gpufleet::core

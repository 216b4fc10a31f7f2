#pragma once
// Reading JSON that comes from outside (HTTP bodies, heartbeats, files): one way in, bounded.
//  - `ParseJsonInput` refuses documents nested deeper than `max_depth` before parsing them (a
//    deeply nested value otherwise overflows the stack of whoever copies or prints it);
//  - the `Checked*` readers take a field only when it has the right JSON type and range: a float
//    is never truncated into an integer, an integer never wraps, and a string never carries a
//    NUL byte (which would cut it short when it reaches the C library). They throw
//    InputFieldError (a std::invalid_argument) naming the field, for a parser's one try/catch.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gpufleet::net {

inline constexpr int kMaxJsonDepth = 64;

// What the checked readers throw: the message ("field: why") and the field on its own.
struct InputFieldError : std::invalid_argument {
  InputFieldError(std::string field_name, const std::string& why)
      : std::invalid_argument(field_name + ": " + why), field(std::move(field_name)) {}
  std::string field;
};

// The deepest nesting of arrays and objects in `text` (strings are skipped, so brackets inside
// them do not count); stops counting past `limit`, so it costs one pass at most.
int JsonNestingDepth(std::string_view text, int limit);

// Parses `text`; errors say what is wrong ("malformed JSON: ...", "nested deeper than 64").
core::Result<nlohmann::json> ParseJsonInput(std::string_view text, int max_depth = kMaxJsonDepth);

// An integer in [lo, hi] (a JSON integer, never a float or a string).
int64_t CheckedInt(const nlohmann::json& value, std::string_view field, int64_t lo, int64_t hi);
// `object[key]` as above, or `fallback` when the key is absent or null.
int64_t CheckedInt(const nlohmann::json& object, const char* key, int64_t lo, int64_t hi,
                   int64_t fallback);
// A finite number in [lo, hi].
double CheckedNumber(const nlohmann::json& value, std::string_view field, double lo, double hi);
double CheckedNumber(const nlohmann::json& object, const char* key, double lo, double hi,
                     double fallback);
// A string of at most `max_bytes` bytes with no NUL byte.
std::string CheckedString(const nlohmann::json& value, std::string_view field,
                          std::size_t max_bytes);
std::string CheckedString(const nlohmann::json& object, const char* key, std::size_t max_bytes,
                          const std::string& fallback);
bool CheckedBool(const nlohmann::json& object, const char* key, bool fallback);

}  // namespace gpufleet::net

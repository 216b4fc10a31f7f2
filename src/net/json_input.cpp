#include "net/json_input.h"

#include <cmath>
#include <stdexcept>

namespace gpufleet::net {

using nlohmann::json;

int JsonNestingDepth(std::string_view text, int limit) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

core::Result<json> ParseJsonInput(std::string_view text, int max_depth) {
  if (JsonNestingDepth(text, max_depth) > max_depth) {
    return core::Error{"malformed JSON: nested deeper than " + std::to_string(max_depth) +
                       " levels"};
  }
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Parse again with exceptions for the position of the error (bad input only).
    try {
      [[maybe_unused]] const json reparsed = json::parse(text.begin(), text.end());
    } catch (const json::exception& e) {
      // parse_error, or out_of_range for a number too large for a double ("1e400").
      return core::Error{std::string("malformed JSON: ") + e.what()};
    }
    return core::Error{"malformed JSON"};
  }
  return j;
}

namespace {

[[noreturn]] void Bad(std::string_view field, const std::string& why) {
  throw InputFieldError(std::string(field), why);
}

}  // namespace

int64_t CheckedInt(const json& value, std::string_view field, int64_t lo, int64_t hi) {
  const std::string range =
      "must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (hi < 0 || v > static_cast<uint64_t>(hi)) Bad(field, range);
    const auto s = static_cast<int64_t>(v);
    if (s < lo) Bad(field, range);
    return s;
  }
  if (!value.is_number_integer()) Bad(field, range);
  const int64_t v = value.get<int64_t>();
  if (v < lo || v > hi) Bad(field, range);
  return v;
}

int64_t CheckedInt(const json& object, const char* key, int64_t lo, int64_t hi, int64_t fallback) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  return CheckedInt(*it, key, lo, hi);
}

double CheckedNumber(const json& value, std::string_view field, double lo, double hi) {
  if (!value.is_number()) Bad(field, "must be a number");
  const double v = value.get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    Bad(field, "must be a number in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return v;
}

double CheckedNumber(const json& object, const char* key, double lo, double hi, double fallback) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  return CheckedNumber(*it, key, lo, hi);
}

std::string CheckedString(const json& value, std::string_view field, std::size_t max_bytes) {
  if (!value.is_string()) Bad(field, "must be a string");
  const std::string& s = value.get_ref<const std::string&>();
  if (s.size() > max_bytes) Bad(field, "longer than " + std::to_string(max_bytes) + " bytes");
  if (s.find('\0') != std::string::npos) Bad(field, "must not contain a NUL byte");
  return s;
}

std::string CheckedString(const json& object, const char* key, std::size_t max_bytes,
                          const std::string& fallback) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  return CheckedString(*it, key, max_bytes);
}

bool CheckedBool(const json& object, const char* key, bool fallback) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) Bad(key, "must be true or false");
  return it->get<bool>();
}

}  // namespace gpufleet::net

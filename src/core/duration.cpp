#include "core/duration.h"

#include <stdexcept>

namespace gpufleet::core {
namespace {

// The number `text` starts with (as std::stod reads it) and how many characters it took.
bool LeadingNumber(const std::string& text, double& value, std::size_t& used) {
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

}  // namespace

std::string DurationText(int64_t ms) {
  const int64_t minutes = ms / 60'000;
  if (minutes >= 24 * 60 && minutes % (24 * 60) == 0)
    return std::to_string(minutes / (24 * 60)) + " d";
  if (minutes >= 60 && minutes % 60 == 0) return std::to_string(minutes / 60) + " h";
  if (minutes >= 1) return std::to_string(minutes) + " min";
  return std::to_string(ms / 1000) + " s";
}

std::optional<int64_t> ParseDurationSeconds(const std::string& text) {
  if (text.find(':') != std::string::npos) {
    int64_t total = 0;
    std::size_t start = 0;
    int parts = 0;
    while (start <= text.size()) {
      const std::size_t colon = text.find(':', start);
      const std::string part =
          text.substr(start, colon == std::string::npos ? colon : colon - start);
      if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos ||
          part.size() > 9) {
        return std::nullopt;
      }
      // At most three parts, checked before the product: "1:2:...:14" overflowed int64 before.
      if (++parts > 3) return std::nullopt;
      total = total * 60 + std::stoll(part);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
    if (parts > 3 || total <= 0 || total > 366 * 86400) return std::nullopt;
    return total;
  }
  std::size_t used = 0;
  double value = 0;
  if (!LeadingNumber(text, value, used)) return std::nullopt;
  const std::string unit = text.substr(used);
  double scale = 1;
  if (unit == "m") {
    scale = 60;
  } else if (unit == "h") {
    scale = 3600;
  } else if (unit == "d") {
    scale = 86400;
  } else if (!unit.empty() && unit != "s") {
    return std::nullopt;
  }
  const double seconds = value * scale;
  if (!(seconds >= 1) || seconds > 366.0 * 86400) return std::nullopt;
  return static_cast<int64_t>(seconds + 0.5);
}

std::optional<int64_t> ParseMemoryMib(const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  if (!LeadingNumber(text, value, used)) return std::nullopt;
  std::string unit = text.substr(used);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  if (!unit.empty() && (unit.back() == 'i')) unit.pop_back();
  double scale = 1;
  if (unit == "K" || unit == "k") {
    scale = 1.0 / 1024;
  } else if (unit == "G" || unit == "g") {
    scale = 1024;
  } else if (unit == "T" || unit == "t") {
    scale = 1024.0 * 1024;
  } else if (!unit.empty() && unit != "M" && unit != "m") {
    return std::nullopt;
  }
  const double mib = value * scale;
  if (!(mib >= 1) || mib > 1e12) return std::nullopt;
  return static_cast<int64_t>(mib + 0.5);
}

}  // namespace gpufleet::core

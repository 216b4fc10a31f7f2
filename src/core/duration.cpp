#include "core/duration.h"

#include <stdexcept>

namespace gpufleet::core {

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
      total = total * 60 + std::stoll(part);
      ++parts;
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
    if (parts > 3 || total <= 0 || total > 366 * 86400) return std::nullopt;
    return total;
  }
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
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

}  // namespace gpufleet::core

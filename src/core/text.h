#pragma once
// Small text helpers for the hand-written parsers of CSV and key = value files.
#include <string_view>
#include <vector>

namespace gpufleet::core {

// `text` cut at every `sep` (n separators give n + 1 pieces, empty ones kept).
std::vector<std::string_view> SplitText(std::string_view text, char sep);
// `text` without leading and trailing spaces, tabs and carriage returns.
std::string_view TrimText(std::string_view text);

}  // namespace gpufleet::core

#pragma once
// Durations and sizes as users type them on the command line and in query strings.
#include <cstdint>
#include <optional>
#include <string>

namespace gpufleet::core {

// "90", "90s", "30m", "2h", "1d" or "H:MM:SS" / "MM:SS" in seconds (at most 366 days); nothing
// when malformed or not positive.
std::optional<int64_t> ParseDurationSeconds(const std::string& text);
// "512M", "16G", "1T" or a plain number of MiB, in MiB; nothing when malformed or not positive.
std::optional<int64_t> ParseMemoryMib(const std::string& text);

}  // namespace gpufleet::core

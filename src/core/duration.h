#pragma once
// Durations and sizes as users type them on the command line and in query strings.
#include <cstdint>
#include <optional>
#include <string>

namespace gpufleet::core {

// "90", "90s", "30m", "2h", "1d" or "H:MM:SS" / "MM:SS" in seconds (at most 366 days); nothing
// when malformed or not positive.
std::optional<int64_t> ParseDurationSeconds(const std::string& text);
// `ms` as people read it in a reason: "2 d", "3 h", "30 min" or "45 s" (whole days or hours
// when it is a multiple of one, else minutes; seconds below a minute).
std::string DurationText(int64_t ms);
// "512M", "16G", "1T" or a plain number of MiB, in MiB; nothing when malformed or not positive.
std::optional<int64_t> ParseMemoryMib(const std::string& text);

}  // namespace gpufleet::core

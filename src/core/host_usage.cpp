#include "core/host_usage.h"

#include <algorithm>
#include <charconv>

namespace gpufleet::core {
namespace {

constexpr std::array<std::string_view, kUsageFigures> kFigureNames = {
    "cpu_usage_us",     "cpu_throttled_periods",   "cpu_throttled_us",
    "cpu_wait_us",      "memory_current_bytes",    "memory_peak_bytes",
    "io_read_bytes",    "io_write_bytes",          "oom_kills",
    "cpu_pressure_some_us", "io_pressure_some_us", "memory_pressure_some_us",
    "io_blocked_us",
};

constexpr std::array<std::string_view, 4> kSourceNames = {"", "cgroup-v2", "cgroup-v1", "proc"};

}  // namespace

std::string_view UsageSourceName(UsageSource source) {
  return kSourceNames[static_cast<std::size_t>(source)];
}

bool ParseUsageSource(std::string_view name, UsageSource& out) {
  for (std::size_t i = 0; i < kSourceNames.size(); ++i) {
    if (kSourceNames[i] == name) {
      out = static_cast<UsageSource>(i);
      return true;
    }
  }
  return false;
}

std::string_view UsageFigureName(UsageFigure figure) {
  return kFigureNames[static_cast<std::size_t>(figure)];
}

std::vector<std::string> HostUsage::Missing() const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < kUsageFigures; ++i) {
    if (figures[i] < 0) out.emplace_back(kFigureNames[i]);
  }
  return out;
}

std::string HostUsageToText(const HostUsage& usage) {
  if (!usage.measured()) return "";
  std::string out(UsageSourceName(usage.source));
  for (int64_t v : usage.figures) out += " " + std::to_string(v);
  return out;
}

bool HostUsageFromText(std::string_view text, HostUsage& out) {
  out = HostUsage{};
  if (text.empty()) return true;
  std::size_t at = text.find(' ');
  if (!ParseUsageSource(text.substr(0, at), out.source) || out.source == UsageSource::kNone) {
    out = HostUsage{};
    return false;
  }
  std::size_t i = 0;
  while (at != std::string_view::npos) {
    const std::size_t start = at + 1;
    at = text.find(' ', start);
    const std::string_view word = text.substr(start, at == std::string_view::npos ? at : at - start);
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (i >= kUsageFigures || ec != std::errc() || end != word.data() + word.size() || v < -1) {
      out = HostUsage{};
      return false;
    }
    out.figures[i++] = v;
  }
  return true;
}

HostUsage CombineRanks(const HostUsage& a, const HostUsage& b) {
  if (!b.measured()) return a;
  if (!a.measured()) return b;
  HostUsage out = a;
  for (std::size_t i = 0; i < kUsageFigures; ++i) {
    const auto f = static_cast<UsageFigure>(i);
    if (a.figures[i] < 0 || b.figures[i] < 0) {
      out.figures[i] = -1;
    } else if (f == UsageFigure::kMemoryCurrentBytes || f == UsageFigure::kMemoryPeakBytes) {
      out.figures[i] = std::max(a.figures[i], b.figures[i]);
    } else {
      out.figures[i] = a.figures[i] + b.figures[i];
    }
  }
  return out;
}

}  // namespace gpufleet::core

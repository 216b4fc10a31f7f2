#include "advise/own_hardware.h"

#include <array>
#include <charconv>
#include <cmath>
#include <system_error>

#include "core/text.h"

namespace gpufleet::advise {

namespace {

struct Key {
  std::string_view name;
  double OwnHardware::*field;
  double min, max;
  bool min_open;  // the minimum itself is out of range
};

constexpr std::array<Key, 7> kKeys = {{
    {"lifetime_years", &OwnHardware::lifetime_years, 0, 50, true},
    {"electricity_usd_per_kwh", &OwnHardware::electricity_usd_per_kwh, 0, 10, false},
    {"pue", &OwnHardware::pue, 1, 5, false},
    {"ops_share", &OwnHardware::ops_share, 0, 10, false},
    {"utilization_target", &OwnHardware::utilization_target, 0, 1, true},
    {"server_overhead_usd_per_gpu", &OwnHardware::server_overhead_usd_per_gpu, 0, 1e7, false},
    {"server_overhead_watts_per_gpu", &OwnHardware::server_overhead_watts_per_gpu, 0, 1e5, false},
}};

std::string Number(double v) {
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest exact round trip
  return ec == std::errc() ? std::string(buf, ptr) : std::string("nan");
}

std::string KnownKeys() {
  std::string out;
  for (const Key& key : kKeys) {
    if (!out.empty()) out += ", ";
    out += key.name;
  }
  return out;
}

}  // namespace

core::Result<OwnHardware> ParseOwnHardware(std::string_view text) {
  OwnHardware config;
  std::array<int, kKeys.size()> seen_at{};  // line of each key, 0: not seen
  int line_no = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = core::TrimText(line);
    if (line.empty()) continue;
    const std::string where = "own hardware line " + std::to_string(line_no);
    size_t eq = line.find('=');
    if (eq == std::string_view::npos)
      return core::Error{where + ": expected 'key = value'", core::ErrorCode::kInvalid};
    const std::string_view name = core::TrimText(line.substr(0, eq));
    const std::string_view value = core::TrimText(line.substr(eq + 1));
    size_t k = 0;
    while (k < kKeys.size() && kKeys[k].name != name) ++k;
    if (k == kKeys.size()) {
      return core::Error{
          where + ": unknown key '" + std::string(name) + "' (known: " + KnownKeys() + ")",
          core::ErrorCode::kInvalid, std::string(name)};
    }
    const Key& key = kKeys[k];
    const std::string at = where + ", key '" + std::string(key.name) + "'";
    if (seen_at[k] != 0) {
      return core::Error{at + ": already set on line " + std::to_string(seen_at[k]),
                         core::ErrorCode::kInvalid, std::string(key.name)};
    }
    seen_at[k] = line_no;
    double v = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || ec != std::errc() || ptr != value.data() + value.size() ||
        !std::isfinite(v)) {
      return core::Error{at + ": '" + std::string(value) + "' is not a number",
                         core::ErrorCode::kInvalid, std::string(key.name)};
    }
    if (v < key.min || (key.min_open && v == key.min) || v > key.max) {
      return core::Error{at + ": " + std::string(value) + " is out of range (" +
                             (key.min_open ? "above " : "") + Number(key.min) + " to " +
                             Number(key.max) + ")",
                         core::ErrorCode::kInvalid, std::string(key.name)};
    }
    config.*key.field = v;
  }
  return config;
}

std::string FormatOwnHardware(const OwnHardware& config) {
  std::string out;
  for (const Key& key : kKeys) {
    out += key.name;
    out += " = ";
    out += Number(config.*key.field);
    out += '\n';
  }
  return out;
}

}  // namespace gpufleet::advise

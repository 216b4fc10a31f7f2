#include "net/host_usage_json.h"

#include <string>

#include "net/json_input.h"

namespace gpufleet::net {

nlohmann::json HostUsageJson(const core::HostUsage& usage) {
  if (!usage.measured()) return nullptr;
  nlohmann::json j = {{"source", core::UsageSourceName(usage.source)}};
  for (std::size_t i = 0; i < core::kUsageFigures; ++i) {
    const std::string name(core::UsageFigureName(static_cast<core::UsageFigure>(i)));
    if (usage.figures[i] >= 0) {
      j[name] = usage.figures[i];
    } else {
      j[name] = nullptr;
    }
  }
  j["missing"] = usage.Missing();
  return j;
}

core::HostUsage ParseHostUsageJson(const nlohmann::json& value, std::string_view field) {
  core::HostUsage u;
  if (value.is_null()) return u;
  const std::string prefix(field);
  if (!value.is_object()) throw InputFieldError(prefix, "must be an object or null");
  auto at = value.find("source");
  if (at == value.end()) throw InputFieldError(prefix + ".source", "missing");
  const std::string source = CheckedString(*at, prefix + ".source", 16);
  if (!core::ParseUsageSource(source, u.source) || u.source == core::UsageSource::kNone) {
    throw InputFieldError(prefix + ".source", "must be cgroup-v2, cgroup-v1 or proc");
  }
  for (std::size_t i = 0; i < core::kUsageFigures; ++i) {
    const std::string name(core::UsageFigureName(static_cast<core::UsageFigure>(i)));
    auto it = value.find(name);
    if (it == value.end() || it->is_null()) continue;
    u.figures[i] = CheckedInt(*it, prefix + "." + name, 0, int64_t{1} << 62);
  }
  return u;
}

}  // namespace gpufleet::net

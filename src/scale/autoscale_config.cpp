#include "scale/autoscale_config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/node.h"
#include "core/text.h"

namespace gpufleet::scale {
namespace {

std::string Where(const std::string& origin, const toml::node& node, const std::string& key) {
  return origin + ":" + std::to_string(node.source().begin.line) + ": " + key;
}

// Fails on a key of `table` not in `known` (listed in the message).
core::Result<bool> OnlyKeys(const toml::table& table, const std::string& origin,
                            const std::string& section, const std::vector<std::string>& known) {
  for (const auto& [key, node] : table) {
    const std::string k(key.str());
    bool found = false;
    for (const auto& name : known) found = found || name == k;
    if (!found) {
      std::string list;
      for (const auto& name : known) list += (list.empty() ? "" : ", ") + name;
      return core::Error{Where(origin, node, section + k) + ": unknown key (expected " + list +
                         ")"};
    }
  }
  return true;
}

// Reads integer `key` into `out` within [lo, hi]; false when absent.
core::Result<bool> ReadInt(const toml::table& table, const std::string& origin,
                           const std::string& key, int64_t lo, int64_t hi, int64_t& out) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return false;
  // Only an integer node: toml++ converts a float unchecked (UB for 6e40).
  if (!node->is_integer()) return core::Error{Where(origin, *node, key) + ": expected an integer"};
  const int64_t value = *node->value<int64_t>();
  if (value < lo || value > hi) {
    return core::Error{Where(origin, *node, key) + ": " + std::to_string(value) +
                       " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]"};
  }
  out = value;
  return true;
}

// Reads a number (integer or float) `key` into `out` within [lo, hi]; false when absent.
core::Result<bool> ReadNumber(const toml::table& table, const std::string& origin,
                              const std::string& key, double lo, double hi, double& out) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return false;
  double value = 0;
  if (node->is_integer()) {
    value = static_cast<double>(*node->value<int64_t>());
  } else if (node->is_floating_point()) {
    value = *node->value<double>();
  } else {
    return core::Error{Where(origin, *node, key) + ": expected a number"};
  }
  if (!std::isfinite(value) || value < lo || value > hi) {
    return core::Error{Where(origin, *node, key) + ": " + std::to_string(value) +
                       " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]"};
  }
  out = value;
  return true;
}

core::Result<bool> ReadString(const toml::table& table, const std::string& origin,
                              const std::string& key, std::string& out) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return false;
  if (!node->is_string()) return core::Error{Where(origin, *node, key) + ": expected a string"};
  out = *node->value<std::string>();
  return true;
}

core::Result<bool> ReadBool(const toml::table& table, const std::string& origin,
                            const std::string& key, bool& out) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return false;
  if (!node->is_boolean()) return core::Error{Where(origin, *node, key) + ": expected true or false"};
  out = *node->value<bool>();
  return true;
}

// Group keys that must be present.
const std::vector<std::string> kRequiredGroupKeys = {
    "name", "gpu_model", "gpus", "cpu_cores", "memory_gib", "price_per_hour", "min", "max",
    "boot_s"};

core::Result<NodeGroup> ReadGroup(const toml::table& t, const std::string& origin,
                                  const core::GpuCatalog& catalog) {
  std::vector<std::string> known = kRequiredGroupKeys;
  known.push_back("spot_price_per_hour");
  known.push_back("priority");
  if (auto ok = OnlyKeys(t, origin, "groups.", known); !ok) return core::Error{ok.error()};
  for (const auto& key : kRequiredGroupKeys) {
    if (!t.contains(key)) {
      return core::Error{Where(origin, t, "groups") + ": missing key '" + key + "'"};
    }
  }
  NodeGroup g;
  int64_t gpus = 0, cpu = 0, mem = 0, min = 0, max = 0, boot = 0, priority = 0;
  constexpr double kMaxPrice = 1e6;
  for (auto read : {ReadString(t, origin, "name", g.name),
                    ReadString(t, origin, "gpu_model", g.model_name),
                    ReadInt(t, origin, "gpus", 1, core::kMaxGpusPerNode, gpus),
                    ReadInt(t, origin, "cpu_cores", 1, 100000, cpu),
                    ReadInt(t, origin, "memory_gib", 1, 1 << 24, mem),
                    ReadNumber(t, origin, "price_per_hour", 0.0, kMaxPrice, g.price_per_hour),
                    ReadNumber(t, origin, "spot_price_per_hour", 0.0, kMaxPrice,
                               g.spot_price_per_hour),
                    ReadInt(t, origin, "min", 0, 10000, min),
                    ReadInt(t, origin, "max", 0, 10000, max),
                    ReadInt(t, origin, "boot_s", 0, 86400, boot),
                    ReadInt(t, origin, "priority", -1000, 1000, priority)}) {
    if (!read.ok()) return core::Error{read.error()};
  }
  if (g.name.size() > 40 || !ValidScaleName(g.name)) {
    return core::Error{Where(origin, *t.get("name"), "name") + ": '" + g.name +
                       "' is not 1..40 characters of a-z, 0-9 and '-' (not first)"};
  }
  const auto model = catalog.Find(g.model_name);
  if (!model) {
    return core::Error{Where(origin, *t.get("gpu_model"), "gpu_model") + ": unknown GPU model '" +
                       g.model_name + "' (see data/gpu_catalog.csv)"};
  }
  g.model = *model;
  if (min > max) {
    return core::Error{Where(origin, *t.get("min"), "min") + ": min " + std::to_string(min) +
                       " is above max " + std::to_string(max)};
  }
  // A price of 0 would take the group out of max_spend_per_hour (and out of the reported spend):
  // a placeholder left in a file must not buy without a limit.
  // Nor may a price be so small that the spend cap divided by it overflows what the planner
  // counts in (1e-300 passed, and a node count of infinity was undefined behaviour).
  constexpr double kMinPrice = 1e-4;
  if (!(g.price_per_hour >= kMinPrice)) {
    return core::Error{Where(origin, *t.get("price_per_hour"), "price_per_hour") +
                       ": must be at least 0.0001 (what one node costs per hour)"};
  }
  if (g.spot_price_per_hour != 0 && !(g.spot_price_per_hour >= kMinPrice)) {
    return core::Error{Where(origin, *t.get("spot_price_per_hour"), "spot_price_per_hour") +
                       ": must be 0 (no spot capacity) or at least 0.0001"};
  }
  if (g.spot_price_per_hour > g.price_per_hour) {
    return core::Error{Where(origin, *t.get("spot_price_per_hour"), "spot_price_per_hour") +
                       ": above price_per_hour (spot capacity is the cheaper kind)"};
  }
  g.gpus = static_cast<int>(gpus);
  g.cpu_milli = cpu * 1000;
  g.memory_mib = mem * 1024;
  g.min = static_cast<int>(min);
  g.max = static_cast<int>(max);
  g.boot_s = boot;
  g.priority = static_cast<int>(priority);
  return g;
}

core::Result<ScalePolicy> ReadPolicy(const toml::table& t, const std::string& origin) {
  if (auto ok = OnlyKeys(t, origin, "policy.",
                         {"scale_up_delay_s", "scale_down_unneeded_s", "max_spend_per_hour",
                          "expander", "spot_fallback_s", "scan_interval_s", "consolidation",
                          "consolidation_min_saving_s"});
      !ok) {
    return core::Error{ok.error()};
  }
  ScalePolicy p;
  std::string expander;
  for (auto read : {ReadInt(t, origin, "scale_up_delay_s", 0, 86400, p.scale_up_delay_s),
                    ReadInt(t, origin, "scale_down_unneeded_s", 0, 7 * 86400,
                            p.scale_down_unneeded_s),
                    ReadNumber(t, origin, "max_spend_per_hour", 0.0, 1e9, p.max_spend_per_hour),
                    ReadString(t, origin, "expander", expander),
                    ReadInt(t, origin, "spot_fallback_s", 0, 7 * 86400, p.spot_fallback_s),
                    ReadInt(t, origin, "scan_interval_s", 1, 3600, p.scan_interval_s),
                    ReadBool(t, origin, "consolidation", p.consolidation),
                    ReadInt(t, origin, "consolidation_min_saving_s", 0, 7 * 86400,
                            p.consolidation_min_saving_s)}) {
    if (!read.ok()) return core::Error{read.error()};
  }
  if (t.contains("consolidation_min_saving_s") && !p.consolidation) {
    return core::Error{Where(origin, *t.get("consolidation_min_saving_s"),
                             "consolidation_min_saving_s") +
                       ": set without consolidation = true (it would do nothing)"};
  }
  if (t.contains("expander")) {
    if (expander == "cheapest") {
      p.expander = Expander::kCheapest;
    } else if (expander == "least-waste") {
      p.expander = Expander::kLeastWaste;
    } else if (expander == "priority") {
      p.expander = Expander::kPriority;
    } else {
      return core::Error{Where(origin, *t.get("expander"), "expander") + ": '" + expander +
                         "' is not one of cheapest, least-waste, priority"};
    }
  }
  return p;
}

core::Result<ProviderConfig> ReadProvider(const toml::table& t, const std::string& origin) {
  if (auto ok = OnlyKeys(t, origin, "provider.", {"kind", "script", "timeout_s", "netns"}); !ok) {
    return core::Error{ok.error()};
  }
  ProviderConfig p;
  for (auto read : {ReadString(t, origin, "kind", p.kind),
                    ReadString(t, origin, "script", p.script),
                    ReadInt(t, origin, "timeout_s", 1, 3600, p.timeout_s),
                    ReadBool(t, origin, "netns", p.netns)}) {
    if (!read.ok()) return core::Error{read.error()};
  }
  if (p.kind == "exec") {
    if (p.script.empty() || p.script.front() != '/') {
      return core::Error{Where(origin, t, "provider.script") +
                         ": the exec provider needs `script`, an absolute path"};
    }
    if (t.contains("netns")) {
      return core::Error{Where(origin, *t.get("netns"), "provider.netns") +
                         ": only the local provider has it"};
    }
  } else if (p.kind == "local") {
    if (t.contains("script")) {
      return core::Error{Where(origin, *t.get("script"), "provider.script") +
                         ": only the exec provider has it"};
    }
  } else {
    return core::Error{Where(origin, t, "provider.kind") + ": '" + p.kind +
                       "' is not one of exec, local"};
  }
  return p;
}

}  // namespace

std::string_view ExpanderName(Expander e) {
  switch (e) {
    case Expander::kCheapest: return "cheapest";
    case Expander::kLeastWaste: return "least-waste";
    case Expander::kPriority: return "priority";
  }
  return "?";
}

int GrowthNodeCount(const NodeGroup& g, const ScalePolicy& policy, bool spot) {
  double n = std::min(g.max, 256);
  const double cheapest = spot && g.HasSpot() ? g.spot_price_per_hour : g.price_per_hour;
  if (std::isfinite(policy.max_spend_per_hour) && cheapest > 0) {
    n = std::min(n, std::floor(policy.max_spend_per_hour / cheapest * (1 + 1e-12)));
  }
  return std::max(0, static_cast<int>(n));
}

bool ValidScaleName(std::string_view name) {
  if (name.empty() || name.size() > 63 || name.front() == '-') return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

int AutoscaleConfig::FindGroup(std::string_view name) const {
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

core::Result<AutoscaleConfig> ParseAutoscaleToml(std::string_view text, const std::string& origin,
                                                 const core::GpuCatalog& catalog,
                                                 bool require_provider) {
  if (const std::string at = core::FirstNonAsciiPosition(text); !at.empty()) {
    return core::Error{origin + ":" + at +
                       ": non-ASCII character: an autoscale file must be plain ASCII"};
  }
  toml::table root;
  try {
    // Debian's toml++ is built with exceptions; this is the edge where the file is parsed.
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    return core::Error{origin + ":" + std::to_string(e.source().begin.line) + ":" +
                       std::to_string(e.source().begin.column) +
                       ": malformed TOML: " + std::string(e.description())};
  }
  if (auto ok = OnlyKeys(root, origin, "", {"groups", "policy", "provider"}); !ok) {
    return core::Error{ok.error()};
  }
  AutoscaleConfig config;
  const toml::array* groups = root["groups"].as_array();
  if (groups == nullptr || groups->empty()) {
    return core::Error{origin + ": groups: no [[groups]] tables: the autoscaler needs at least one"};
  }
  if (groups->size() > 1000) return core::Error{origin + ": groups: more than 1000 groups"};
  std::set<std::string> names;
  for (const toml::node& node : *groups) {
    const toml::table* table = node.as_table();
    if (table == nullptr) return core::Error{Where(origin, node, "groups") + ": expected a table"};
    auto group = ReadGroup(*table, origin, catalog);
    if (!group) return core::Error{group.error()};
    if (!names.insert(group.value().name).second) {
      return core::Error{Where(origin, *table, "groups.name") + ": group '" + group.value().name +
                         "' is named twice"};
    }
    config.groups.push_back(std::move(group).value());
  }
  if (const toml::node* policy = root.get("policy")) {
    if (!policy->is_table()) return core::Error{Where(origin, *policy, "policy") + ": expected a table"};
    auto p = ReadPolicy(*policy->as_table(), origin);
    if (!p) return core::Error{p.error()};
    config.policy = p.value();
  }
  double min_spend = 0;
  for (const auto& g : config.groups) min_spend += g.min * g.price_per_hour;
  if (min_spend > config.policy.max_spend_per_hour) {
    return core::Error{origin + ": policy.max_spend_per_hour: the groups' `min` nodes alone cost " +
                       std::to_string(min_spend) + " per hour"};
  }
  if (const toml::node* provider = root.get("provider")) {
    if (!provider->is_table()) {
      return core::Error{Where(origin, *provider, "provider") + ": expected a table"};
    }
    auto p = ReadProvider(*provider->as_table(), origin);
    if (!p) return core::Error{p.error()};
    config.provider = std::move(p).value();
  } else if (require_provider) {
    return core::Error{origin + ": provider: no [provider] table (kind = \"exec\" or \"local\")"};
  }
  return config;
}

}  // namespace gpufleet::scale

#include "advise/usage_json.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace gpufleet::advise {

namespace {

using nlohmann::json;

struct Field {
  const char* name;
  float UsageBucket::*member;
};
constexpr Field kFields[] = {
    {"sm_mean", &UsageBucket::sm_mean},
    {"sm_min", &UsageBucket::sm_min},
    {"sm_max", &UsageBucket::sm_max},
    {"membw_pct", &UsageBucket::membw_pct},
    {"fb_used_pct", &UsageBucket::fb_used_pct},
    {"pcie_mb_s", &UsageBucket::pcie_mb_s},
    {"power_pct", &UsageBucket::power_pct},
    {"throttled_pct", &UsageBucket::throttled_pct},
    {"active_gpus", &UsageBucket::active_gpus},
    {"cpu_used_pct", &UsageBucket::cpu_used_pct},
    {"cpu_throttled_pct", &UsageBucket::cpu_throttled_pct},
    {"cpu_pressure_pct", &UsageBucket::cpu_pressure_pct},
    {"io_pressure_pct", &UsageBucket::io_pressure_pct},
    {"mem_pressure_pct", &UsageBucket::mem_pressure_pct},
    {"mem_used_pct", &UsageBucket::mem_used_pct},
    {"io_mb_s", &UsageBucket::io_mb_s},
};

double TwoDecimals(float v) {
  return v < 0 ? -1.0 : std::round(static_cast<double>(v) * 100) / 100;
}

}  // namespace

std::string UsageToJson(const JobUsage& usage) {
  json j;
  j["host_source"] = std::string(core::UsageSourceName(usage.host_source));
  j["cpu_alloc_milli"] = usage.cpu_alloc_milli;
  j["mem_alloc_mib"] = usage.mem_alloc_mib;
  j["oom_kills"] = usage.oom_kills;
  json names = json::array({"start_ms"});
  for (const Field& f : kFields) names.push_back(f.name);
  j["bucket_fields"] = names;
  json buckets = json::array();
  for (const UsageBucket& b : usage.buckets) {
    json row = json::array({b.start_ms});
    for (const Field& f : kFields) row.push_back(TwoDecimals(b.*(f.member)));
    buckets.push_back(std::move(row));
  }
  j["buckets"] = std::move(buckets);
  json gpus = json::array();
  for (const GpuTotal& g : usage.gpus) {
    gpus.push_back({{"node", g.node},
                    {"index", g.index},
                    {"samples", g.samples},
                    {"sm_sum", std::round(g.sm_sum * 100) / 100},
                    {"busy_samples", g.busy_samples},
                    {"mem_peak_mib", g.mem_peak_mib},
                    {"mem_total_mib", g.mem_total_mib}});
  }
  j["gpus"] = std::move(gpus);
  return j.dump();
}

core::Result<JobUsage> UsageFromJson(std::string_view text) {
  using R = core::Result<JobUsage>;
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return core::Error("usage: not a JSON object");
  try {
    JobUsage u;
    if (!core::ParseUsageSource(j.value("host_source", std::string()), u.host_source)) {
      return core::Error("usage: bad host_source", core::ErrorCode::kInvalid, "host_source");
    }
    u.cpu_alloc_milli = j.value("cpu_alloc_milli", int64_t{0});
    u.mem_alloc_mib = j.value("mem_alloc_mib", int64_t{0});
    u.oom_kills = j.value("oom_kills", int64_t{0});
    std::vector<float UsageBucket::*> columns;
    for (const json& name : j.at("bucket_fields")) {
      const std::string n = name.get<std::string>();
      if (n == "start_ms") {
        columns.push_back(nullptr);
        continue;
      }
      float UsageBucket::*member = nullptr;
      for (const Field& f : kFields) {
        if (n == f.name) member = f.member;
      }
      if (member == nullptr) return R(core::Error("usage: unknown bucket field " + n));
      columns.push_back(member);
    }
    for (const json& row : j.at("buckets")) {
      if (!row.is_array() || row.size() != columns.size()) {
        return core::Error("usage: a bucket row has the wrong length", core::ErrorCode::kInvalid,
                           "buckets");
      }
      UsageBucket b;
      for (std::size_t i = 0; i < columns.size(); ++i) {
        if (columns[i] == nullptr) {
          b.start_ms = row[i].get<int64_t>();
        } else {
          b.*(columns[i]) = row[i].get<float>();
        }
      }
      if (!u.buckets.empty() && b.start_ms <= u.buckets.back().start_ms) {
        return core::Error("usage: buckets out of order", core::ErrorCode::kInvalid, "buckets");
      }
      u.buckets.push_back(b);
    }
    for (const json& g : j.at("gpus")) {
      GpuTotal t;
      t.node = g.at("node").get<std::string>();
      t.index = g.at("index").get<int>();
      t.samples = g.at("samples").get<int64_t>();
      t.sm_sum = g.at("sm_sum").get<double>();
      t.busy_samples = g.at("busy_samples").get<int64_t>();
      t.mem_peak_mib = g.value("mem_peak_mib", int64_t{-1});
      t.mem_total_mib = g.value("mem_total_mib", int64_t{-1});
      u.gpus.push_back(std::move(t));
    }
    return u;
  } catch (const json::exception& e) {
    return core::Error(std::string("usage: ") + e.what());
  }
}

std::string FactsToJson(const JobFacts& facts) {
  const json j = {{"gpus", facts.gpus},
                  {"nodes", facts.nodes},
                  {"cpu_milli", facts.cpu_milli},
                  {"memory_mib", facts.memory_mib},
                  {"node_cpu_milli", facts.node_cpu_milli},
                  {"gpu_model", facts.gpu_model},
                  {"run_ms", facts.run_ms},
                  {"ended", facts.ended}};
  return j.dump();
}

core::Result<JobFacts> FactsFromJson(std::string_view text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return core::Error("facts: not a JSON object");
  try {
    JobFacts f;
    f.gpus = j.value("gpus", f.gpus);
    f.nodes = j.value("nodes", f.nodes);
    f.cpu_milli = j.value("cpu_milli", f.cpu_milli);
    f.memory_mib = j.value("memory_mib", f.memory_mib);
    f.node_cpu_milli = j.value("node_cpu_milli", f.node_cpu_milli);
    f.gpu_model = j.value("gpu_model", f.gpu_model);
    f.run_ms = j.value("run_ms", f.run_ms);
    f.ended = j.value("ended", f.ended);
    return f;
  } catch (const json::exception& e) {
    return core::Error(std::string("facts: ") + e.what());
  }
}

}  // namespace gpufleet::advise

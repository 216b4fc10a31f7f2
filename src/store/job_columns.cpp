#include "store/job_columns.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace gpufleet::store::columns {

int64_t ArgsBytes(const JobRecord& job) {
  return static_cast<int64_t>(
      nlohmann::json(job.argv).dump().size() + nlohmann::json(job.env).dump().size() +
      ContainerToJson(job.container).size() + job.workdir.size() + job.name.size() +
      job.queue.size() + job.gpu_type.size() + job.client_token.size());
}

std::string WithEmptyEnv(std::string columns) {
  const std::size_t at = columns.find(",env,");
  if (at != std::string::npos) columns.replace(at, 5, ",'[]',");
  return columns;
}

std::vector<std::string> StringsFromJson(const std::string& text) {
  std::vector<std::string> out;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return out;
  for (const nlohmann::json& s : j) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> EnvFromJson(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  const nlohmann::json env = nlohmann::json::parse(text, nullptr, false);
  if (!env.is_array()) return out;
  for (const nlohmann::json& kv : env) {
    if (kv.is_array() && kv.size() == 2 && kv[0].is_string() && kv[1].is_string()) {
      out.emplace_back(kv[0].get<std::string>(), kv[1].get<std::string>());
    }
  }
  return out;
}

std::string ContainerToJson(const core::ContainerSpec& spec) {
  if (spec.empty()) return "";
  nlohmann::json mounts = nlohmann::json::array();
  for (const core::BindMount& m : spec.mounts) mounts.push_back(core::BindMountText(m));
  return nlohmann::json{{"image", spec.image}, {"mounts", mounts}}.dump();
}

core::ContainerSpec ContainerFromJson(const std::string& text) {
  core::ContainerSpec spec;
  if (text.empty()) return spec;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("image") || !j["image"].is_string()) return spec;
  spec.image = j["image"].get<std::string>();
  if (j.contains("mounts") && j["mounts"].is_array()) {
    for (const nlohmann::json& m : j["mounts"]) {
      if (!m.is_string()) continue;
      if (auto parsed = core::ParseBindMount(m.get<std::string>())) {
        spec.mounts.push_back(parsed.value());
      }
    }
  }
  return spec;
}

void SetPlacementFromJson(const std::string& text, JobRecord& j) {
  std::vector<std::pair<int64_t, RankPlacement>> ranks;
  const nlohmann::json rows = nlohmann::json::parse(text, nullptr, false);
  if (rows.is_array()) {
    for (const nlohmann::json& row : rows) {
      if (!row.is_array() || row.size() != 3 || !row[0].is_number_integer() ||
          !row[1].is_string() || !row[2].is_array()) {
        continue;
      }
      RankPlacement r;
      r.node = row[1].get<std::string>();
      for (const nlohmann::json& g : row[2]) {
        if (g.is_number_integer()) r.gpus.push_back(g.get<int>());
      }
      ranks.emplace_back(row[0].get<int64_t>(), std::move(r));
    }
  }
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [rank, r] : ranks) {
    j.node += (j.node.empty() ? "" : ",") + r.node;
    j.gpu_indices.insert(j.gpu_indices.end(), r.gpus.begin(), r.gpus.end());
    j.placement.push_back(std::move(r));
  }
}

TokenKind TokenKindFromName(const std::string& name) {
  return name == "node" ? TokenKind::kNode : name == "join" ? TokenKind::kJoin : TokenKind::kUser;
}

}  // namespace gpufleet::store::columns

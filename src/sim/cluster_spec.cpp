#include "sim/cluster_spec.h"

#include <toml++/toml.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/cluster.h"
#include "core/text.h"
#include "sim/openb_trace.h"

namespace gpufleet::sim {
namespace {

std::string Where(const std::string& origin, const toml::node& node, const std::string& key) {
  return origin + ":" + std::to_string(node.source().begin.line) + ": " + key;
}

// Reads an optional integer `key` of `table` into `out`, within [lo, hi].
core::Result<bool> ReadInt(const toml::table& table, const std::string& origin,
                           const std::string& key, int64_t lo, int64_t hi, int64_t& out) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return false;
  // Asked for an int64_t, toml++ converts a float node unchecked (UB for 6e40; found by
  // fuzz/cluster_spec_fuzz): only an integer node is read.
  if (!node->is_integer()) return core::Error{Where(origin, *node, key) + ": expected an integer"};
  const auto value = node->value<int64_t>();
  if (!value) return core::Error{Where(origin, *node, key) + ": expected an integer"};
  if (*value < lo || *value > hi) {
    return core::Error{Where(origin, *node, key) + ": " + std::to_string(*value) +
                       " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]"};
  }
  out = *value;
  return true;
}

}  // namespace

core::Result<ClusterSpec> ParseClusterToml(std::string_view text, const std::string& origin,
                                           const core::GpuCatalog& catalog) {
  // A spec needs no character beyond ASCII, so none reaches the parser (see FirstNonAsciiPosition).
  if (const std::string at = core::FirstNonAsciiPosition(text); !at.empty()) {
    return core::Error{origin + ":" + at + ": non-ASCII character: a cluster spec must be plain ASCII"};
  }
  toml::table root;
  try {
    // Debian's toml++ is built with exceptions; this is the edge where file input is parsed.
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    return core::Error{origin + ":" + std::to_string(e.source().begin.line) + ":" +
                       std::to_string(e.source().begin.column) +
                       ": malformed TOML: " + std::string(e.description())};
  }
  ClusterSpec spec;
  spec.name = std::filesystem::path(origin).stem().string();
  for (const auto& [key, node] : root) {
    const std::string k(key.str());
    if (k == "name") {
      const auto name = node.value<std::string>();
      if (!node.is_string() || name->empty()) {
        return core::Error{Where(origin, node, k) + ": expected a non-empty string"};
      }
      spec.name = *name;
    } else if (k != "nodes") {
      return core::Error{Where(origin, node, k) + ": unknown key (expected name, nodes)"};
    }
  }
  const toml::array* groups = root["nodes"].as_array();
  if (groups == nullptr || groups->empty()) {
    return core::Error{origin + ": no [[nodes]] tables: a cluster needs at least one node"};
  }
  static const std::set<std::string> kKeys = {"count",     "name",      "gpus",
                                              "gpu_model", "cpu_cores", "memory_gib"};
  for (const toml::node& group_node : *groups) {
    const toml::table* group = group_node.as_table();
    if (group == nullptr)
      return core::Error{Where(origin, group_node, "nodes") + ": expected a table"};
    for (const auto& [key, node] : *group) {
      if (!kKeys.count(std::string(key.str()))) {
        return core::Error{Where(origin, node, std::string(key.str())) +
                           ": unknown key (expected count, name, gpus, gpu_model, cpu_cores, "
                           "memory_gib)"};
      }
    }
    int64_t count = 1, gpus = 0, cpu_cores = 0, memory_gib = 0;
    for (auto read : {ReadInt(*group, origin, "count", 1, 100000, count),
                      ReadInt(*group, origin, "gpus", 0, core::kMaxGpusPerNode, gpus),
                      ReadInt(*group, origin, "cpu_cores", 1, 100000, cpu_cores),
                      ReadInt(*group, origin, "memory_gib", 1, 1 << 24, memory_gib)}) {
      if (!read.ok()) return core::Error{read.error()};
    }
    if (!group->contains("gpus")) {
      return core::Error{Where(origin, *group, "nodes") + ": missing key 'gpus'"};
    }
    std::string prefix = "node";
    if (const toml::node* name = group->get("name")) {
      if (!name->is_string())
        return core::Error{Where(origin, *name, "name") + ": expected a string"};
      prefix = *name->value<std::string>();
    }
    core::NodeSpec node;
    node.num_gpus = static_cast<int>(gpus);
    if (const toml::node* model = group->get("gpu_model")) {
      if (!model->is_string()) {
        return core::Error{Where(origin, *model, "gpu_model") + ": expected a string"};
      }
      const std::string model_name = *model->value<std::string>();
      const auto id = catalog.Find(model_name);
      if (!id) {
        return core::Error{Where(origin, *model, "gpu_model") + ": unknown GPU model '" +
                           model_name + "' (see data/gpu_catalog.csv)"};
      }
      node.model = *id;
    } else if (gpus > 0) {
      return core::Error{Where(origin, *group, "nodes") + ": missing key 'gpu_model'"};
    }
    node.cpu_milli = 1000 * (cpu_cores > 0 ? cpu_cores : std::max<int64_t>(8, 8 * gpus));
    node.memory_mib = 1024 * (memory_gib > 0 ? memory_gib : std::max<int64_t>(64, 64 * gpus));
    for (int64_t i = 0; i < count; ++i) {
      node.name = prefix + "-" + std::to_string(spec.nodes.size());
      if (auto valid = core::ValidateNodeSpec(node); !valid.ok()) {
        return core::Error{origin + ": node " + node.name + ": " + valid.error()};
      }
      spec.nodes.push_back(node);
    }
  }
  return spec;
}

core::Result<ClusterSpec> ResolveCluster(const std::string& name_or_path,
                                         const core::GpuCatalog& catalog) {
  if (name_or_path.rfind("openb:", 0) == 0) {
    const std::string path = name_or_path.substr(6);
    auto nodes = ReadOpenbNodes(path, catalog);
    if (!nodes) return core::Error{nodes.error()};
    ClusterSpec spec;
    spec.name = std::filesystem::path(path).stem().string();
    spec.nodes = std::move(nodes).value();
    return spec;
  }
  const bool is_file =
      name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".toml") == 0;
  if (!is_file) return NamedCluster(name_or_path, catalog);
  std::ifstream in(name_or_path, std::ios::binary);
  if (!in) return core::Error{"cannot read cluster spec " + name_or_path};
  std::ostringstream text;
  text << in.rdbuf();
  return ParseClusterToml(text.str(), name_or_path, catalog);
}

}  // namespace gpufleet::sim

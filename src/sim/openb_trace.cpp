#include "sim/openb_trace.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <unordered_map>

#include "core/cluster.h"
#include "sim/csv_table.h"

namespace gpufleet::sim {

using core::Error;
using core::Result;

namespace {

const std::vector<std::string> kNodeColumns = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};
const std::vector<std::string> kPodColumns = {"name", "cpu_milli", "memory_mib", "num_gpu",
                                              "gpu_milli"};

Result<std::vector<core::NodeSpec>> NodesFromTable(Result<CsvTable> table, const std::string& path,
                                                   const core::GpuCatalog& catalog) {
  if (!table) return Error{table.error()};
  const CsvTable& t = table.value();
  std::vector<core::NodeSpec> nodes;
  nodes.reserve(t.rows());
  std::unordered_map<std::string_view, size_t> seen;
  seen.reserve(t.rows());
  const auto sn = t.ColumnOf("sn"), cpu_milli = t.ColumnOf("cpu_milli"),
             memory_mib = t.ColumnOf("memory_mib"), gpu = t.ColumnOf("gpu"),
             model_column = t.ColumnOf("model");
  for (size_t r = 0; r < t.rows(); ++r) {
    core::NodeSpec node;
    node.name = std::string(t.Field(r, sn));
    if (node.name.empty()) return Error{t.Where(r, sn) + ": empty node name"};
    if (!seen.emplace(t.Field(r, sn), r).second) {
      return Error{t.Where(r, sn) + ": duplicate node name '" + node.name + "'"};
    }
    auto cpu = t.NonNegativeInt(r, cpu_milli);
    if (!cpu) return Error{cpu.error()};
    auto mem = t.NonNegativeInt(r, memory_mib);
    if (!mem) return Error{mem.error()};
    auto gpus = t.NonNegativeInt(r, gpu);
    if (!gpus) return Error{gpus.error()};
    if (gpus.value() > core::kMaxGpusPerNode) {
      return Error{t.Where(r, gpu) + ": at most " + std::to_string(core::kMaxGpusPerNode) +
                   " GPUs per node are supported, found " + std::to_string(gpus.value())};
    }
    std::string_view model = t.Field(r, model_column);
    if (gpus.value() > 0 || !model.empty()) {
      auto id = catalog.Find(model);
      if (!id)
        return Error{t.Where(r, model_column) + ": unknown GPU model '" + std::string(model) + "'"};
      node.model = *id;
    }
    node.cpu_milli = cpu.value();
    node.memory_mib = mem.value();
    node.num_gpus = static_cast<int>(gpus.value());
    nodes.push_back(std::move(node));
  }
  if (nodes.empty()) return Error{path + ": no nodes"};
  return nodes;
}

Result<std::vector<OpenbPod>> PodsFromTable(Result<CsvTable> table,
                                            const core::GpuCatalog& catalog) {
  if (!table) return Error{table.error()};
  const CsvTable& t = table.value();
  const bool has_times = t.HasColumn("creation_time") && t.HasColumn("deletion_time");
  std::vector<OpenbPod> pods;
  pods.reserve(t.rows());
  std::unordered_map<std::string_view, size_t> seen;
  seen.reserve(t.rows());
  const auto name = t.ColumnOf("name"), cpu_milli = t.ColumnOf("cpu_milli"),
             memory_mib = t.ColumnOf("memory_mib"), num_gpu_column = t.ColumnOf("num_gpu"),
             gpu_milli_column = t.ColumnOf("gpu_milli"), gpu_spec = t.ColumnOf("gpu_spec"),
             qos = t.ColumnOf("qos"), creation_time = t.ColumnOf("creation_time"),
             deletion_time = t.ColumnOf("deletion_time");
  for (size_t r = 0; r < t.rows(); ++r) {
    OpenbPod& pod = pods.emplace_back();  // in place; on an error the whole list is dropped
    pod.line = t.line(r);
    core::JobSpec& job = pod.job;
    job.name = std::string(t.Field(r, name));
    if (job.name.empty()) return Error{t.Where(r, name) + ": empty pod name"};
    if (!seen.emplace(t.Field(r, name), r).second) {
      return Error{t.Where(r, name) + ": duplicate pod name '" + job.name + "'"};
    }
    auto cpu = t.NonNegativeInt(r, cpu_milli);
    if (!cpu) return Error{cpu.error()};
    auto mem = t.NonNegativeInt(r, memory_mib);
    if (!mem) return Error{mem.error()};
    auto num_gpu = t.NonNegativeInt(r, num_gpu_column);
    if (!num_gpu) return Error{num_gpu.error()};
    auto gpu_milli = t.NonNegativeInt(r, gpu_milli_column);
    if (!gpu_milli) return Error{gpu_milli.error()};
    if (num_gpu.value() > core::kMaxGpusPerNode) {
      return Error{t.Where(r, num_gpu_column) + ": " + std::to_string(num_gpu.value()) +
                   " GPUs is more than any node can have (" +
                   std::to_string(core::kMaxGpusPerNode) + ")"};
    }
    if (gpu_milli.value() > core::kGpuMilli) {
      return Error{t.Where(r, gpu_milli_column) + ": must be at most 1000, found " +
                   std::to_string(gpu_milli.value())};
    }
    job.cpu_milli = cpu.value();
    job.memory_mib = mem.value();
    job.num_gpu = static_cast<int>(num_gpu.value());
    // A GPU-less pod's gpu_milli means nothing; a multi-GPU pod takes whole GPUs.
    job.gpu_milli = job.num_gpu == 0 ? 0 : static_cast<int>(gpu_milli.value());
    if (job.num_gpu > 0 && job.gpu_milli == 0) {
      return Error{t.Where(r, gpu_milli_column) + ": must be positive when num_gpu is " +
                   std::to_string(job.num_gpu)};
    }
    if (job.num_gpu > 1 && job.gpu_milli != core::kGpuMilli) {
      return Error{t.Where(r, gpu_milli_column) +
                   ": pods with num_gpu > 1 must take whole GPUs (1000)"};
    }
    pod.spec_label = std::string(t.Field(r, gpu_spec));
    auto models = catalog.ParseSpec(pod.spec_label);
    if (!models) return Error{t.Where(r, gpu_spec) + ": " + models.error()};
    job.gpu_models = models.value();
    job.queue = std::string(t.Field(r, qos));  // the pod's QoS class; "" when absent
    if (has_times) {
      auto created = t.NonNegativeInt(r, creation_time);
      if (!created) return Error{created.error()};
      pod.creation_time = created.value();
      if (!t.Field(r, deletion_time).empty()) {
        auto deleted = t.NonNegativeInt(r, deletion_time);
        if (!deleted) return Error{deleted.error()};
        pod.deletion_time = deleted.value();
      }
    }
  }
  return pods;
}

}  // namespace

Result<std::vector<core::NodeSpec>> ReadOpenbNodes(const std::string& path,
                                                   const core::GpuCatalog& catalog) {
  return NodesFromTable(CsvTable::ReadFile(path, kNodeColumns), path, catalog);
}

Result<std::vector<core::NodeSpec>> ParseOpenbNodes(std::string text, const std::string& path,
                                                    const core::GpuCatalog& catalog) {
  return NodesFromTable(CsvTable::Parse(std::move(text), path, kNodeColumns), path, catalog);
}

Result<std::vector<OpenbPod>> ReadOpenbPods(const std::string& path,
                                            const core::GpuCatalog& catalog) {
  return PodsFromTable(CsvTable::ReadFile(path, kPodColumns), catalog);
}

Result<std::vector<OpenbPod>> ParseOpenbPods(std::string text, const std::string& path,
                                             const core::GpuCatalog& catalog) {
  return PodsFromTable(CsvTable::Parse(std::move(text), path, kPodColumns), catalog);
}

Result<OpenbWorkload> ReadOpenbWorkload(const std::string& nodes_path, const std::string& pods_path,
                                        const core::GpuCatalog& catalog) {
  OpenbWorkload w;
  w.nodes_path = nodes_path;
  w.pods_path = pods_path;
  auto nodes = ReadOpenbNodes(nodes_path, catalog);
  if (!nodes) return Error{nodes.error()};
  w.nodes = std::move(nodes).value();
  auto pods = ReadOpenbPods(pods_path, catalog);
  if (!pods) return Error{pods.error()};
  w.pods = std::move(pods).value();
  // Largest GPU count per model, to reject pods that no node could ever hold.
  std::vector<int> max_gpus(core::kMaxModels, 0);
  for (const auto& n : w.nodes) max_gpus[n.model] = std::max(max_gpus[n.model], n.num_gpus);
  for (const auto& pod : w.pods) {
    if (!pod.job.UsesGpu()) continue;
    int most = 0;
    for (int m = 0; m < core::kMaxModels; ++m) {
      if (pod.job.gpu_models.Contains(static_cast<core::ModelId>(m)))
        most = std::max(most, max_gpus[m]);
    }
    if (pod.job.num_gpu > most) {
      return Error{pods_path + ":" + std::to_string(pod.line) + ": column 'num_gpu': pod '" +
                   pod.job.name + "' asks for " + std::to_string(pod.job.num_gpu) +
                   " GPUs but no node" + (pod.spec_label.empty() ? "" : " of its GPU models") +
                   " has more than " + std::to_string(most)};
    }
  }
  return w;
}

Result<PlacementOrder> ReadOrderFile(const std::string& path, const OpenbWorkload& workload) {
  std::ifstream in(path);
  if (!in) return Error{path + ": cannot open order file"};
  return ParseOrderFile(in, path, workload);
}

Result<PlacementOrder> ParseOrderFile(std::istream& in, const std::string& path,
                                      const OpenbWorkload& workload) {
  std::unordered_map<std::string_view, int> pod_index, node_index;
  pod_index.reserve(workload.pods.size());
  node_index.reserve(workload.nodes.size());
  for (size_t i = 0; i < workload.pods.size(); ++i) pod_index.emplace(workload.pods[i].job.name, i);
  for (size_t i = 0; i < workload.nodes.size(); ++i) node_index.emplace(workload.nodes[i].name, i);
  PlacementOrder order;
  order.source = path;
  const uint32_t unset = ~uint32_t{0};
  order.node_rank.assign(workload.nodes.size(), unset);
  std::vector<char> rank_used(workload.nodes.size(), 0);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    // Built only for an error: one string per line cost more than the lookups.
    auto where = [&path, line_no] { return path + ":" + std::to_string(line_no); };
    if (line.rfind("pod ", 0) == 0) {
      std::string_view name = std::string_view(line).substr(4);
      auto it = pod_index.find(name);
      if (it == pod_index.end()) {
        size_t tuned = name.rfind("-tuned-");
        if (tuned != std::string_view::npos) it = pod_index.find(name.substr(0, tuned));
      }
      if (it == pod_index.end()) {
        return Error{where() + ": column 2: unknown pod '" + std::string(name) + "' (not in " +
                     workload.pods_path + ")"};
      }
      order.pods.push_back(it->second);
    } else if (line.rfind("node ", 0) == 0) {
      std::string_view rest = std::string_view(line).substr(5);
      size_t space = rest.find(' ');
      if (space == std::string_view::npos) return Error{where() + ": expected 'node RANK NAME'"};
      std::string_view rank_text = rest.substr(0, space);
      std::string_view name = rest.substr(space + 1);
      uint32_t rank = 0;
      auto [ptr, ec] = std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), rank);
      if (ec != std::errc() || ptr != rank_text.data() + rank_text.size() ||
          rank >= workload.nodes.size()) {
        return Error{where() + ": column 2: node rank must be an integer in 0.." +
                     std::to_string(workload.nodes.size() - 1) + ", found '" +
                     std::string(rank_text) + "'"};
      }
      auto it = node_index.find(name);
      if (it == node_index.end()) {
        return Error{where() + ": column 3: unknown node '" + std::string(name) + "'"};
      }
      if (rank_used[rank] || order.node_rank[it->second] != unset) {
        return Error{where() + ": duplicate node rank or node"};
      }
      rank_used[rank] = 1;
      order.node_rank[it->second] = rank;
    } else {
      return Error{where() + ": column 1: expected 'pod NAME' or 'node RANK NAME'"};
    }
  }
  for (size_t i = 0; i < order.node_rank.size(); ++i) {
    if (order.node_rank[i] == unset) {
      // Without node lines, node order is file order; with some, all must be ranked.
      if (std::find(rank_used.begin(), rank_used.end(), 1) == rank_used.end()) {
        for (size_t j = 0; j < order.node_rank.size(); ++j)
          order.node_rank[j] = static_cast<uint32_t>(j);
        break;
      }
      return Error{path + ": node '" + workload.nodes[i].name + "' has no rank"};
    }
  }
  if (order.pods.empty()) return Error{path + ": no 'pod' lines"};
  return order;
}

}  // namespace gpufleet::sim

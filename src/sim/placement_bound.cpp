#include "sim/placement_bound.h"

#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "core/check.h"
#include "sim/numerics.h"

namespace gpufleet::sim {
namespace {

// The dual feasible functions the model uses: u_1 (an item over half a bin counts whole), u_2 and
// u_3. More add rows that rarely bind.
constexpr int kDualFeasibleOrders[] = {1, 2, 3};

// u_k(amount / capacity), exact for whole amounts.
double DualFeasibleRatio(int k, int64_t amount, int64_t capacity) {
  GPUFLEET_CHECK(capacity > 0 && amount >= 0 && amount <= capacity);
  const int64_t scaled = (k + 1) * amount;
  if (scaled % capacity == 0) return static_cast<double>(amount) / static_cast<double>(capacity);
  return static_cast<double>(scaled / capacity) / k;
}

using NodeKey = PlacementBoundModel::NodeKey;
using PodKey = PlacementBoundModel::PodKey;

}  // namespace

PlacementBoundModel::NodeKey PlacementBoundModel::KeyOf(const core::NodeSpec& node) {
  return {node.cpu_milli, node.memory_mib, node.num_gpus, node.model};
}

PlacementBoundModel::PodKey PlacementBoundModel::KeyOf(const core::JobSpec& pod) {
  return {pod.cpu_milli, pod.memory_mib, pod.num_gpu, pod.gpu_milli, pod.gpu_models.bits()};
}

int PlacementBoundModel::ColumnOf(const core::NodeSpec& node, const core::JobSpec& pod) const {
  const auto c = class_index.find(KeyOf(node));
  const auto t = type_index.find(KeyOf(pod));
  if (c == class_index.end() || t == type_index.end()) return -1;
  const auto column = column_index.find({c->second, t->second});
  return column == column_index.end() ? -1 : column->second;
}

double DualFeasible(int k, double x) {
  GPUFLEET_CHECK(k >= 1 && x >= 0 && x <= 1);
  const double scaled = (k + 1) * x;
  if (scaled == std::floor(scaled)) return x;
  return std::floor(scaled) / k;
}

PlacementBoundModel BuildPlacementBound(const OpenbWorkload& workload, std::span<const int> pods) {
  PlacementBoundModel model;
  std::map<NodeKey, int> class_count;
  for (const core::NodeSpec& n : workload.nodes) {
    ++class_count[PlacementBoundModel::KeyOf(n)];
    model.capacity_gpus += n.num_gpus;
  }
  std::map<PodKey, int> type_count;
  for (int index : pods) {
    GPUFLEET_CHECK(index >= 0 && static_cast<size_t>(index) < workload.pods.size());
    const core::JobSpec& job = workload.pods[index].job;
    model.arrived_gpu_milli += job.GpuDemandMilli();
    if (!job.UsesGpu()) continue;
    ++type_count[PlacementBoundModel::KeyOf(job)];
  }
  model.node_classes = static_cast<int>(class_count.size());
  model.pod_types = static_cast<int>(type_count.size());

  LinearProgram& lp = model.lp;
  std::vector<LinearProgram::Row> supply;  // one row per pod type
  for (const auto& [key, count] : type_count) {
    supply.push_back({"supply" + std::to_string(supply.size()), static_cast<double>(count), {}});
  }
  int next_class = 0;
  for (const auto& [node, nodes] : class_count) {
    const auto [cpu, memory, gpus, node_model] = node;
    const int this_class = next_class++;
    model.class_index[node] = this_class;
    const std::string tag = "c" + std::to_string(this_class);
    // Capacity rows of the class: totals, then the per-GPU and per-node inequalities.
    LinearProgram::Row cpu_row{tag + ".cpu", static_cast<double>(nodes) * cpu, {}};
    LinearProgram::Row memory_row{tag + ".mem", static_cast<double>(nodes) * memory, {}};
    LinearProgram::Row gpu_row{
        tag + ".gpu", static_cast<double>(nodes) * gpus * core::kGpuMilli, {}};
    std::vector<LinearProgram::Row> packing;
    for (int k : kDualFeasibleOrders) {
      const std::string order = std::to_string(k);
      packing.push_back({tag + ".gpu.u" + order, static_cast<double>(nodes) * gpus, {}});
      packing.push_back({tag + ".cpu.u" + order, static_cast<double>(nodes), {}});
      packing.push_back({tag + ".mem.u" + order, static_cast<double>(nodes), {}});
    }
    int next_type = 0;
    for (const auto& [pod, count] : type_count) {
      const auto [pod_cpu, pod_memory, pod_gpus, milli, models] = pod;
      const int type = next_type++;
      model.type_index[pod] = type;
      const bool fits = pod_cpu <= cpu && pod_memory <= memory && pod_gpus <= gpus &&
                        ((models >> node_model) & 1u) != 0;
      if (!fits) continue;
      const int column = static_cast<int>(lp.objective.size());
      model.column_index[{this_class, type}] = column;
      lp.column_names.push_back(tag + ".t" + std::to_string(type));
      lp.objective.push_back(static_cast<double>(pod_gpus) * milli / core::kGpuMilli);
      lp.column_upper.push_back(count);
      supply[type].terms.emplace_back(column, 1.0);
      cpu_row.terms.emplace_back(column, static_cast<double>(pod_cpu));
      memory_row.terms.emplace_back(column, static_cast<double>(pod_memory));
      gpu_row.terms.emplace_back(column, static_cast<double>(pod_gpus) * milli);
      for (size_t i = 0; i < std::size(kDualFeasibleOrders); ++i) {
        const int k = kDualFeasibleOrders[i];
        // A whole-GPU pod fills each of its GPUs; a sharing pod sits on one GPU.
        const double per_gpu = milli >= core::kGpuMilli
                                   ? static_cast<double>(pod_gpus)
                                   : DualFeasibleRatio(k, milli, core::kGpuMilli);
        const double per_cpu = cpu > 0 ? DualFeasibleRatio(k, pod_cpu, cpu) : 0;
        const double per_memory = memory > 0 ? DualFeasibleRatio(k, pod_memory, memory) : 0;
        if (per_gpu > 0) packing[3 * i].terms.emplace_back(column, per_gpu);
        if (per_cpu > 0) packing[3 * i + 1].terms.emplace_back(column, per_cpu);
        if (per_memory > 0) packing[3 * i + 2].terms.emplace_back(column, per_memory);
      }
    }
    for (LinearProgram::Row* row : {&cpu_row, &memory_row, &gpu_row}) {
      if (!row->terms.empty()) lp.rows.push_back(std::move(*row));
    }
    for (LinearProgram::Row& row : packing) {
      if (!row.terms.empty()) lp.rows.push_back(std::move(row));
    }
  }
  for (LinearProgram::Row& row : supply) {
    if (!row.terms.empty()) lp.rows.push_back(std::move(row));
  }
  return model;
}

std::vector<int> PodsArrivedBy(const OpenbWorkload& workload, const PlacementOrder& order,
                               int percent) {
  int64_t capacity_milli = 0;
  for (const core::NodeSpec& n : workload.nodes) {
    capacity_milli += int64_t{n.num_gpus} * core::kGpuMilli;
  }
  GPUFLEET_CHECK(capacity_milli > 0);
  const double gpus = static_cast<double>(capacity_milli) / core::kGpuMilli;
  // The same bucket SummarizeCurves gives each event.
  int64_t arrived = 0;
  size_t last_in = 0, last_in_next = 0;
  bool any_in = false, any_in_next = false;
  for (size_t i = 0; i < order.pods.size(); ++i) {
    arrived += workload.pods[order.pods[i]].job.GpuDemandMilli();
    const int64_t bucket = RoundHalfEven(static_cast<double>(arrived) / gpus / 10.0);
    if (bucket <= percent) {
      last_in = i;
      any_in = any_in || bucket == percent;
    }
    if (bucket <= percent + 1) {
      last_in_next = i;
      any_in_next = true;
    }
  }
  if (!any_in && !any_in_next) return {};
  const size_t end = any_in ? last_in + 1 : last_in_next + 1;
  return {order.pods.begin(), order.pods.begin() + static_cast<std::ptrdiff_t>(end)};
}

}  // namespace gpufleet::sim

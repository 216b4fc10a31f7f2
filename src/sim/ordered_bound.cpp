#include "sim/ordered_bound.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <tuple>

#include "core/check.h"
#include "core/cluster.h"

namespace gpufleet::sim {
namespace {

using NodeKey = PlacementBoundModel::NodeKey;

// For every node, the nearest earlier node of the same spec, or -1.
std::vector<int> PreviousTwin(const std::vector<core::NodeSpec>& nodes) {
  std::map<NodeKey, int> last;
  std::vector<int> out(nodes.size(), -1);
  for (size_t j = 0; j < nodes.size(); ++j) {
    const NodeKey key = PlacementBoundModel::KeyOf(nodes[j]);
    const auto it = last.find(key);
    if (it != last.end()) out[j] = it->second;
    last[key] = static_cast<int>(j);
  }
  return out;
}

class ProgramBuilder {
 public:
  explicit ProgramBuilder(OrderedPlacementProgram& program) : program_(program) {}

  int Column(std::string name, double upper, double objective, bool integer) {
    LinearProgram& lp = program_.lp;
    lp.column_names.push_back(std::move(name));
    lp.column_upper.push_back(upper);
    lp.objective.push_back(objective);
    lp.integer.push_back(integer);
    if (integer) ++program_.binary_columns;
    return static_cast<int>(lp.objective.size()) - 1;
  }

  void Row(std::string name, double upper, std::vector<std::pair<int, double>> terms) {
    if (terms.empty()) {
      GPUFLEET_CHECK(upper >= 0);  // an empty row that cannot hold is a bug in the builder
      return;
    }
    program_.lp.rows.push_back({std::move(name), upper, std::move(terms)});
  }

 private:
  OrderedPlacementProgram& program_;
};

}  // namespace

OrderedInstance OrderedSubsample(const OpenbWorkload& workload, int nodes, double tune,
                                 core::Rng& rng) {
  const int all_nodes = static_cast<int>(workload.nodes.size());
  GPUFLEET_CHECK(nodes >= 1 && nodes <= all_nodes);
  std::vector<int> node_ids(all_nodes);
  std::iota(node_ids.begin(), node_ids.end(), 0);
  for (int k = 0; k < nodes; ++k) {
    std::swap(node_ids[k], node_ids[k + static_cast<int>(rng.Below(all_nodes - k))]);
  }
  OrderedInstance out;
  out.workload.nodes_path = workload.nodes_path;
  out.workload.pods_path = workload.pods_path;
  int64_t capacity = 0;
  for (int k = 0; k < nodes; ++k) {
    out.workload.nodes.push_back(workload.nodes[node_ids[k]]);
    capacity += int64_t{workload.nodes[node_ids[k]].num_gpus} * core::kGpuMilli;
  }
  std::vector<int> pod_ids(workload.pods.size());
  std::iota(pod_ids.begin(), pod_ids.end(), 0);
  for (size_t i = pod_ids.size(); i > 1; --i) std::swap(pod_ids[i - 1], pod_ids[rng.Below(i)]);
  const double limit = tune * static_cast<double>(capacity);
  int64_t demand = 0;
  const core::ClusterSnapshot empty(out.workload.nodes);
  for (int id : pod_ids) {
    const OpenbPod& pod = workload.pods[id];
    bool fits = false;
    for (int j = 0; j < empty.size() && !fits; ++j) fits = empty.state(j).Fits(pod.job);
    if (!fits) continue;
    if (static_cast<double>(demand + pod.job.GpuDemandMilli()) > limit) break;
    demand += pod.job.GpuDemandMilli();
    out.workload.pods.push_back(pod);
  }
  out.order.pods.resize(out.workload.pods.size());
  std::iota(out.order.pods.begin(), out.order.pods.end(), 0);
  out.order.node_rank.resize(nodes);
  std::iota(out.order.node_rank.begin(), out.order.node_rank.end(), 0u);
  for (int k = nodes - 1; k > 0; --k) {
    std::swap(out.order.node_rank[k], out.order.node_rank[rng.Below(k + 1)]);
  }
  out.order.source = "subsample";
  return out;
}

OrderedPlacementProgram BuildOrderedPlacementProgram(const OpenbWorkload& workload) {
  OrderedPlacementProgram program;
  ProgramBuilder b(program);
  const std::vector<core::NodeSpec>& nodes = workload.nodes;
  const int pods = static_cast<int>(workload.pods.size());
  const int node_count = static_cast<int>(nodes.size());
  for (const core::NodeSpec& n : nodes) program.capacity_gpus += n.num_gpus;
  const auto grid = [&](int inner) {
    return std::vector<std::vector<int>>(pods, std::vector<int>(inner, -1));
  };
  program.place = grid(node_count);
  program.short_cpu = grid(node_count);
  program.short_memory = grid(node_count);
  program.short_gpu = grid(node_count);
  program.gpu.assign(pods, std::vector<std::vector<int>>(node_count));
  program.blocked.assign(pods, std::vector<std::vector<int>>(node_count));

  // Columns first: where each pod may go (it fits the node empty), and on which GPUs.
  const core::ClusterSnapshot empty(nodes);
  for (int i = 0; i < pods; ++i) {
    const core::JobSpec& job = workload.pods[i].job;
    const std::string pod = "p" + std::to_string(i);
    for (int j = 0; j < node_count; ++j) {
      if (!empty.state(j).Fits(job)) continue;
      const std::string at = pod + ".n" + std::to_string(j);
      program.place[i][j] =
          b.Column(at, 1, static_cast<double>(job.GpuDemandMilli()) / core::kGpuMilli, true);
      if (!job.UsesGpu()) continue;
      for (int g = 0; g < nodes[j].num_gpus; ++g) {
        program.gpu[i][j].push_back(b.Column(at + ".g" + std::to_string(g), 1, 0, true));
      }
    }
  }

  const std::vector<int> twin = PreviousTwin(nodes);
  for (int i = 0; i < pods; ++i) {
    const core::JobSpec& job = workload.pods[i].job;
    const std::string pod = "p" + std::to_string(i);
    std::vector<std::pair<int, double>> placed;  // sum over nodes of place[i][j]
    for (int j = 0; j < node_count; ++j) {
      if (program.place[i][j] >= 0) placed.emplace_back(program.place[i][j], 1.0);
    }
    b.Row(pod + ".once", 1, placed);
    for (int j = 0; j < node_count; ++j) {
      const int y = program.place[i][j];
      if (y < 0) continue;
      const core::NodeSpec& node = nodes[j];
      const std::string at = pod + ".n" + std::to_string(j);
      const std::vector<int>& z = program.gpu[i][j];
      if (!z.empty()) {  // the pod's GPUs: num_gpu of them when it is placed here, none otherwise
        std::vector<std::pair<int, double>> take{{y, -job.num_gpu}};
        std::vector<std::pair<int, double>> give{{y, job.num_gpu}};
        for (int column : z) {
          take.emplace_back(column, 1.0);
          give.emplace_back(column, -1.0);
        }
        b.Row(at + ".gpus", 0, take);
        b.Row(at + ".gpus-", 0, give);
      }
      // Left out only with a reason at this node: its CPU, memory or GPUs are too full.
      std::vector<std::pair<int, double>> reasons = placed;
      for (auto& term : reasons) term.second = -1.0;
      std::vector<std::pair<int, double>> cpu_before, memory_before;
      for (int k = 0; k < i; ++k) {
        const int earlier = program.place[k][j];
        if (earlier < 0) continue;
        const core::JobSpec& other = workload.pods[k].job;
        if (other.cpu_milli > 0) cpu_before.emplace_back(earlier, -other.cpu_milli);
        if (other.memory_mib > 0) memory_before.emplace_back(earlier, -other.memory_mib);
      }
      // Short of one resource: what came before uses more than the node's amount less this
      // pod's. `before` holds the earlier pods' uses, negated.
      const auto short_of = [&](const std::string& name, int64_t capacity, int64_t need,
                                std::vector<std::pair<int, double>> before, int& column) {
        if (need <= 0 || before.empty()) return;
        column = b.Column(at + "." + name, 1, 0, true);
        reasons.emplace_back(column, -1.0);
        before.emplace_back(column, static_cast<double>(capacity - need + 1));
        b.Row(at + "." + name, 0, before);
      };
      short_of("short-cpu", node.cpu_milli, job.cpu_milli, std::move(cpu_before),
               program.short_cpu[i][j]);
      short_of("short-mem", node.memory_mib, job.memory_mib, std::move(memory_before),
               program.short_memory[i][j]);
      if (job.UsesGpu() && i > 0) {
        // GPU g blocks the pod when what came before uses more than 1000 - gpu_milli of it; the
        // pod finds no GPU set when more than num_gpus - num_gpu GPUs block it. `blocked` may be
        // continuous: a whole-GPU pod's threshold is 1 milli (uses are whole milli), and a
        // sharing pod needs all G GPUs blocked (G values of at most 1 summing to G are all 1), so
        // no fraction can stand in for a block.
        const int w = b.Column(at + ".short-gpu", 1, 0, true);
        program.short_gpu[i][j] = w;
        reasons.emplace_back(w, -1.0);
        std::vector<std::pair<int, double>> enough{
            {w, static_cast<double>(node.num_gpus - job.num_gpu + 1)}};
        for (int g = 0; g < node.num_gpus; ++g) {
          const std::string on = at + ".g" + std::to_string(g);
          const int h = b.Column(on + ".blocked", 1, 0, false);
          program.blocked[i][j].push_back(h);
          enough.emplace_back(h, -1.0);
          std::vector<std::pair<int, double>> used{
              {h, static_cast<double>(core::kGpuMilli - job.gpu_milli + 1)}};
          for (int k = 0; k < i; ++k) {
            if (program.gpu[k][j].empty()) continue;
            used.emplace_back(program.gpu[k][j][g], -workload.pods[k].job.gpu_milli);
          }
          b.Row(on + ".blocked", 0, used);
        }
        b.Row(at + ".short-gpu", 0, enough);
      }
      b.Row(at + ".must", -1, reasons);
      // First-use order: GPU g is used only once GPU g - 1 has been, node j once its twin has.
      for (size_t g = 1; g < z.size(); ++g) {
        std::vector<std::pair<int, double>> order{{z[g], 1.0}};
        for (int k = 0; k <= i; ++k) {
          if (!program.gpu[k][j].empty()) order.emplace_back(program.gpu[k][j][g - 1], -1.0);
        }
        b.Row(at + ".g" + std::to_string(g) + ".after", 0, order);
      }
      if (twin[j] >= 0) {
        std::vector<std::pair<int, double>> order{{y, 1.0}};
        for (int k = 0; k <= i; ++k) {
          if (program.place[k][twin[j]] >= 0) order.emplace_back(program.place[k][twin[j]], -1.0);
        }
        b.Row(at + ".after", 0, order);
      }
    }
  }
  // Capacity once every pod has arrived (pods never leave, so it holds at every moment).
  for (int j = 0; j < node_count; ++j) {
    const std::string at = "n" + std::to_string(j);
    std::vector<std::pair<int, double>> cpu, memory;
    std::vector<std::vector<std::pair<int, double>>> gpu(nodes[j].num_gpus);
    for (int i = 0; i < pods; ++i) {
      if (program.place[i][j] < 0) continue;
      const core::JobSpec& job = workload.pods[i].job;
      if (job.cpu_milli > 0) cpu.emplace_back(program.place[i][j], job.cpu_milli);
      if (job.memory_mib > 0) memory.emplace_back(program.place[i][j], job.memory_mib);
      for (size_t g = 0; g < program.gpu[i][j].size(); ++g) {
        gpu[g].emplace_back(program.gpu[i][j][g], job.gpu_milli);
      }
    }
    b.Row(at + ".cpu", static_cast<double>(nodes[j].cpu_milli), cpu);
    b.Row(at + ".mem", static_cast<double>(nodes[j].memory_mib), memory);
    for (size_t g = 0; g < gpu.size(); ++g) {
      b.Row(at + ".g" + std::to_string(g), core::kGpuMilli, gpu[g]);
    }
  }
  return program;
}

std::vector<double> OrderedSolutionOf(const OrderedPlacementProgram& program,
                                      const OpenbWorkload& workload, const PlacementRun& run) {
  const std::vector<core::NodeSpec>& nodes = workload.nodes;
  const int pods = static_cast<int>(workload.pods.size());
  const int node_count = static_cast<int>(nodes.size());
  GPUFLEET_CHECK(run.node.size() == workload.pods.size());
  constexpr int kNever = 1 << 30;
  // Rename nodes (within a spec) and each node's GPUs by first use.
  std::vector<int> node_first(node_count, kNever);
  std::vector<std::vector<int>> gpu_first(node_count);
  for (int j = 0; j < node_count; ++j) gpu_first[j].assign(nodes[j].num_gpus, kNever);
  for (int i = pods - 1; i >= 0; --i) {
    const int j = run.node[i];
    if (j < 0) continue;
    node_first[j] = i;
    for (int g = 0; g < nodes[j].num_gpus; ++g) {
      if ((run.gpus[i] >> g) & 1u) gpu_first[j][g] = i;
    }
  }
  std::map<NodeKey, std::vector<int>> by_spec;  // node indices of each spec, in index order
  for (int j = 0; j < node_count; ++j) by_spec[PlacementBoundModel::KeyOf(nodes[j])].push_back(j);
  std::vector<int> node_name(node_count);  // actual node -> its name in the program
  for (auto& [key, members] : by_spec) {
    std::vector<int> used = members;
    std::stable_sort(used.begin(), used.end(),
                     [&](int a, int c) { return node_first[a] < node_first[c]; });
    for (size_t k = 0; k < members.size(); ++k) node_name[used[k]] = members[k];
  }
  std::vector<std::vector<int>> gpu_name(node_count);  // per actual node: GPU -> its name
  for (int j = 0; j < node_count; ++j) {
    std::vector<int> order(nodes[j].num_gpus);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int c) { return gpu_first[j][a] < gpu_first[j][c]; });
    gpu_name[j].assign(nodes[j].num_gpus, 0);
    for (size_t k = 0; k < order.size(); ++k) gpu_name[j][order[k]] = static_cast<int>(k);
  }

  std::vector<double> x(program.lp.objective.size(), 0.0);
  // Replay in program names: what is used on each node and GPU before each pod.
  std::vector<int64_t> cpu_used(node_count, 0), memory_used(node_count, 0);
  std::vector<std::vector<int64_t>> gpu_used(node_count);
  for (int j = 0; j < node_count; ++j) gpu_used[j].assign(nodes[j].num_gpus, 0);
  for (int i = 0; i < pods; ++i) {
    const core::JobSpec& job = workload.pods[i].job;
    for (int j = 0; j < node_count; ++j) {
      const core::NodeSpec& node = nodes[j];
      if (program.short_cpu[i][j] >= 0 && cpu_used[j] > node.cpu_milli - job.cpu_milli) {
        x[program.short_cpu[i][j]] = 1;
      }
      if (program.short_memory[i][j] >= 0 && memory_used[j] > node.memory_mib - job.memory_mib) {
        x[program.short_memory[i][j]] = 1;
      }
      if (program.short_gpu[i][j] < 0) continue;
      int blocking = 0;
      for (int g = 0; g < node.num_gpus; ++g) {
        const double threshold = core::kGpuMilli - job.gpu_milli + 1;
        x[program.blocked[i][j][g]] =
            std::min(1.0, static_cast<double>(gpu_used[j][g]) / threshold);
        blocking += gpu_used[j][g] >= threshold ? 1 : 0;
      }
      if (blocking >= node.num_gpus - job.num_gpu + 1) x[program.short_gpu[i][j]] = 1;
    }
    const int actual = run.node[i];
    if (actual < 0) continue;
    const int j = node_name[actual];
    GPUFLEET_CHECK(program.place[i][j] >= 0);
    x[program.place[i][j]] = 1;
    cpu_used[j] += job.cpu_milli;
    memory_used[j] += job.memory_mib;
    for (int g = 0; g < nodes[actual].num_gpus; ++g) {
      if (((run.gpus[i] >> g) & 1u) == 0) continue;
      const int named = gpu_name[actual][g];
      x[program.gpu[i][j][named]] = 1;
      gpu_used[j][named] += job.gpu_milli;
    }
  }
  return x;
}

}  // namespace gpufleet::sim

#include "sched/queued_job.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/gpu_catalog.h"

namespace gpufleet::sched {

QueuedJob BuildQueuedJob(const JobAsk& ask, Estimates estimates, const JobRunTime& run_time) {
  QueuedJob q;
  q.id = ask.id;
  q.total_gpus = std::max(1, ask.total_gpus);
  q.nodes = ask.nodes > 1 ? ask.nodes : 0;
  q.gpu_milli = ask.gpu_milli;
  if (ask.min_gpus > 0 && ask.min_gpus < q.total_gpus && q.gpu_milli >= core::kGpuMilli &&
      q.nodes == 0) {
    q.min_gpus = ask.min_gpus;
  }
  q.gpu_models = ask.gpu_models;
  q.cpu_milli_per_gpu = ask.cpu_milli_per_gpu;
  q.memory_mib_per_gpu = ask.memory_mib_per_gpu;
  q.submit_s = ask.submit_s;
  q.queue = ask.queue;
  q.priority = ask.priority;
  q.restartable = ask.restartable;
  q.attained_gpu_s = run_time.attained_gpu_s;
  q.waiting_since_s = run_time.waiting_since_s;
  double estimate = std::nan("");
  switch (estimates) {
    case Estimates::kNone:
      break;
    case Estimates::kPredicted:
      estimate = RemainingEstimate(run_time.predicted_s, q.attained_gpu_s, q.total_gpus);
      break;
    case Estimates::kOracle:
      estimate = RemainingEstimate(run_time.true_s, q.attained_gpu_s, q.total_gpus);
      break;
  }
  if (ask.time_limit_s > 0) {
    estimate = std::isnan(estimate) ? ask.time_limit_s : std::min(estimate, ask.time_limit_s);
  }
  q.estimate_s = estimate;
  return q;
}

namespace {

// NeverFits over `node_count` nodes, the i-th read by `spec_at(i)`: a list of specs or a snapshot.
template <typename SpecAt>
std::optional<core::Error> NeverFitsOn(const QueuedJob& job, int node_count, const SpecAt& spec_at,
                                       bool allow_spread, std::string_view models_label) {
  if (IsElastic(job)) {  // it can start at its fewest
    QueuedJob least = job;
    least.total_gpus = job.min_gpus;
    least.min_gpus = 0;
    return NeverFitsOn(least, node_count, spec_at, allow_spread, models_label);
  }
  const core::GpuCatalog& catalog = core::GpuCatalog::Builtin();
  const std::string models = models_label.empty() ? "the asked" : std::string(models_label);
  const bool share = job.gpu_milli < core::kGpuMilli;
  const int per_node = job.nodes > 1 ? job.total_gpus / job.nodes : job.total_gpus;
  int largest = -1;           // GPUs of the largest node of its models
  int64_t model_gpus = 0;     // GPUs of its models over all nodes
  int big_enough = 0;         // nodes of its models with `per_node` GPUs
  int gpus_fit_cpu_short = 0, gpus_fit_memory_short = 0;
  int64_t cpu_most = 0, memory_most = 0;
  // Spread over nodes, each node gives the GPUs its CPU and memory cover at the job's per-GPU ask
  // (as PlaceGang takes them on an empty node): with CPU alone, and with CPU and memory.
  int64_t spread_cpu_gpus = 0, spread_gpus = 0;
  for (int i = 0; i < node_count; ++i) {
    const core::NodeSpec& n = spec_at(i);
    if (!job.gpu_models.Contains(n.model) || n.num_gpus <= 0) continue;
    largest = std::max(largest, n.num_gpus);
    model_gpus += n.num_gpus;
    int64_t by_cpu = n.num_gpus;
    if (job.cpu_milli_per_gpu > 0) by_cpu = std::min(by_cpu, n.cpu_milli / job.cpu_milli_per_gpu);
    int64_t usable = by_cpu;
    if (job.memory_mib_per_gpu > 0) {
      usable = std::min(usable, n.memory_mib / job.memory_mib_per_gpu);
    }
    spread_cpu_gpus += by_cpu;
    spread_gpus += usable;
    if (n.num_gpus < (share ? 1 : per_node)) continue;
    const int taken = share ? 1 : per_node;
    const bool cpu_ok = n.cpu_milli >= job.cpu_milli_per_gpu * taken;
    const bool memory_ok = n.memory_mib >= job.memory_mib_per_gpu * taken;
    cpu_most = std::max(cpu_most, n.cpu_milli);
    memory_most = std::max(memory_most, n.memory_mib);
    if (cpu_ok && memory_ok) {
      ++big_enough;
    } else if (!cpu_ok) {
      ++gpus_fit_cpu_short;
    } else {
      ++gpus_fit_memory_short;
    }
  }
  if (largest < 0) {
    std::string present;  // models of the cluster, for the message
    for (int i = 0; i < node_count; ++i) {
      const core::NodeSpec& n = spec_at(i);
      if (n.num_gpus <= 0) continue;
      const std::string& name = catalog.model(n.model).name;
      if (present.find(name) == std::string::npos) {
        present += (present.empty() ? "" : ", ") + name;
      }
    }
    return core::Error{"gpu_type: no node has " + models + " GPUs (nodes have: " +
                           (present.empty() ? "none" : present) + ")",
                       core::ErrorCode::kInfeasible, "gpu_type"};
  }
  const std::string of_models = job.gpu_models.IsAll() ? "" : " with " + models + " GPUs";
  if (allow_spread && job.nodes <= 1 && !share) {
    if (job.total_gpus > model_gpus) {
      return core::Error{"gpus: asks for " + std::to_string(job.total_gpus) +
                             " GPUs; the cluster has " + std::to_string(model_gpus) + of_models,
                         core::ErrorCode::kInfeasible, "gpus"};
    }
    if (job.total_gpus > spread_gpus) {
      const bool cpu = job.total_gpus > spread_cpu_gpus;
      return core::Error{
          std::string(cpu ? "cpu: asks " + std::to_string(job.cpu_milli_per_gpu) + " milli-CPUs"
                          : "memory: asks " + std::to_string(job.memory_mib_per_gpu) + " MiB") +
              " per GPU; the cluster's nodes" + of_models + " can give that to " +
              std::to_string(cpu ? spread_cpu_gpus : spread_gpus) + " GPUs, not " +
              std::to_string(job.total_gpus),
          core::ErrorCode::kInfeasible, cpu ? "cpu" : "memory"};
    }
    return std::nullopt;  // spread over nodes
  }
  if (!share && per_node > largest) {
    return core::Error{"gpus: asks " + std::to_string(per_node) +
                           " GPUs per node; the largest node" + of_models + " has " +
                           std::to_string(largest),
                       core::ErrorCode::kInfeasible, "gpus"};
  }
  const int wanted = job.nodes > 1 ? job.nodes : 1;
  if (big_enough >= wanted) return std::nullopt;
  if (big_enough + gpus_fit_cpu_short + gpus_fit_memory_short >= wanted) {
    const bool cpu = gpus_fit_cpu_short > 0;
    const int taken = share ? 1 : per_node;
    return cpu ? core::Error{"cpu: asks " + std::to_string(job.cpu_milli_per_gpu * taken) +
                                 " milli-CPUs per node; the most a node" + of_models +
                                 " has is " + std::to_string(cpu_most),
                             core::ErrorCode::kInfeasible, "cpu"}
               : core::Error{"memory: asks " + std::to_string(job.memory_mib_per_gpu * taken) +
                                 " MiB per node; the most a node" + of_models + " has is " +
                                 std::to_string(memory_most),
                             core::ErrorCode::kInfeasible, "memory"};
  }
  return core::Error{"nodes: asks " + std::to_string(job.nodes) + " nodes with " +
                         std::to_string(per_node) + " GPUs each; the cluster has " +
                         std::to_string(big_enough) + of_models,
                     core::ErrorCode::kInfeasible, "nodes"};
}

std::optional<core::Error> NeverFitsOnCluster(const QueuedJob& job,
                                              const core::ClusterSnapshot& cluster,
                                              std::span<const core::NodeSpec> more_nodes,
                                              bool allow_spread) {
  int most_gpus = cluster.max_node_gpus();
  for (const core::NodeSpec& n : more_nodes) most_gpus = std::max(most_gpus, n.num_gpus);
  // As PlaceGang places it: a job of whole GPUs on no set number of nodes that is larger than
  // every node is spread over several, whatever `allow_spread` says.
  const bool spreads = allow_spread || LargerThanEveryNode(job, FewestGpus(job), most_gpus);
  const int in_cluster = cluster.size();
  return NeverFitsOn(
      job, in_cluster + static_cast<int>(more_nodes.size()),
      [&](int i) -> const core::NodeSpec& {
        return i < in_cluster ? cluster.spec(i) : more_nodes[static_cast<size_t>(i - in_cluster)];
      },
      spreads, "");
}

// `check` over the nodes a fleet may grow by (`growth`, each named by its group), one group's at
// a time, as an autoscaler buys a gang's nodes in one group: nothing when any group's fit, else
// the first group's error. One group, or none, is checked as it is.
template <typename Check>
std::optional<core::Error> PerGrowthGroup(std::span<const core::NodeSpec> growth,
                                          const Check& check) {
  std::vector<std::string_view> groups;
  for (const core::NodeSpec& n : growth) {
    if (std::find(groups.begin(), groups.end(), n.name) == groups.end()) groups.push_back(n.name);
  }
  if (groups.size() <= 1) return check(growth);
  std::optional<core::Error> first;
  std::vector<core::NodeSpec> one;
  for (std::string_view group : groups) {
    one.clear();
    for (const core::NodeSpec& n : growth) {
      if (n.name == group) one.push_back(n);
    }
    auto why = check(std::span<const core::NodeSpec>(one));
    if (!why) return std::nullopt;
    if (!first) first = std::move(why);
  }
  return first;
}

}  // namespace

std::optional<core::Error> NeverFits(const QueuedJob& job, std::span<const core::NodeSpec> nodes,
                                     std::span<const core::NodeSpec> growth, bool allow_spread,
                                     std::string_view models_label) {
  std::vector<core::NodeSpec> all;
  return PerGrowthGroup(growth, [&](std::span<const core::NodeSpec> group) {
    all.assign(nodes.begin(), nodes.end());
    all.insert(all.end(), group.begin(), group.end());
    return NeverFits(job, all, allow_spread, models_label);
  });
}

std::optional<core::Error> NeverFits(const QueuedJob& job, std::span<const core::NodeSpec> nodes,
                                     bool allow_spread, std::string_view models_label) {
  return NeverFitsOn(
      job, static_cast<int>(nodes.size()),
      [&](int i) -> const core::NodeSpec& { return nodes[static_cast<size_t>(i)]; }, allow_spread,
      models_label);
}

std::optional<core::Error> NeverFits(const QueuedJob& job, const core::ClusterSnapshot& cluster,
                                     std::span<const core::NodeSpec> growth, bool allow_spread) {
  return PerGrowthGroup(growth, [&](std::span<const core::NodeSpec> more_nodes) {
    return NeverFitsOnCluster(job, cluster, more_nodes, allow_spread);
  });
}

}  // namespace gpufleet::sched

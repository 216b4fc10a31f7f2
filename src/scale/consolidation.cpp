#include "scale/consolidation.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <unordered_set>

#include "sched/gang_placement.h"
#include "sched/placer.h"
#include "sched/queued_job.h"

namespace gpufleet::scale {
namespace {

// An allocation made on the working snapshot, kept so that a failed trial can be undone.
struct Taken {
  int node;
  core::JobSpec spec;
  core::GpuMask gpus;
};

void Take(core::ClusterSnapshot& cluster, int node, const core::JobSpec& spec, core::GpuMask gpus,
          std::vector<Taken>* undo) {
  cluster.Allocate(node, spec, gpus);
  if (undo != nullptr) undo->push_back({node, spec, gpus});
}

// Takes what is free on `node`, so that nothing can be placed there.
void BlockNode(core::ClusterSnapshot& cluster, int node, std::vector<Taken>* undo = nullptr) {
  core::JobSpec host;
  host.cpu_milli = cluster.state(node).cpu_free;
  host.memory_mib = cluster.state(node).memory_free;
  if (host.cpu_milli > 0 || host.memory_mib > 0) Take(cluster, node, host, 0, undo);
  for (int g = 0; g < cluster.state(node).num_gpus; ++g) {
    const int left = cluster.state(node).gpu_free[g];
    if (left <= 0) continue;
    core::JobSpec gpu;
    gpu.num_gpu = 1;
    gpu.gpu_milli = left;
    Take(cluster, node, gpu, core::GpuMask{1} << g, undo);
  }
}

// Milli-GPUs `job` holds through allocation `a`.
int64_t HeldMilli(const sched::QueuedJob& job, const sched::Allocation& a) {
  return int64_t{std::popcount(a.gpus)} * std::min(job.gpu_milli, core::kGpuMilli);
}

struct Candidate {
  double utilization;
  int node;
};

}  // namespace

std::vector<Plan::Consolidation> PlanConsolidation(const ConsolidationContext& ctx,
                                                   core::ClusterSnapshot room,
                                                   std::vector<int>& keep,
                                                   const sched::PlacementPolicy& placement,
                                                   core::Rng& rng) {
  const std::vector<NodeGroup>& groups = *ctx.groups;
  const std::vector<ManagedNode>& nodes = *ctx.nodes;
  const std::vector<RunningJobView>& running = *ctx.running;
  const int ready = std::min(ctx.ready_nodes, room.size());
  std::vector<Plan::Consolidation> out;

  // The managed node at each ready index; nodes that may not take a moved job are blocked.
  const std::unordered_set<std::string> retiring(ctx.retiring->begin(), ctx.retiring->end());
  std::vector<int> managed(static_cast<size_t>(ready), -1);
  int managed_ready = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ManagedNode& n = nodes[i];
    if (!n.ready || n.group < 0 || n.group >= static_cast<int>(groups.size()) ||
        n.cluster_index < 0 || n.cluster_index >= ready) {
      continue;
    }
    if (n.leaving || retiring.count(n.name) > 0) {
      BlockNode(room, n.cluster_index);
      continue;
    }
    managed[n.cluster_index] = static_cast<int>(i);
    ++managed_ready;
  }
  for (int n = ready; n < room.size(); ++n) BlockNode(room, n);  // booting

  // The jobs on each node, and the nodes that must stay.
  std::vector<std::vector<size_t>> jobs_on(static_cast<size_t>(ready));
  std::vector<uint8_t> stays(static_cast<size_t>(ready), 0);
  std::vector<int64_t> held(static_cast<size_t>(ready), 0);
  for (size_t j = 0; j < running.size(); ++j) {
    const RunningJobView& v = running[j];
    const bool movable = v.restartable && v.run.placement.size() == 1;
    for (const sched::Allocation& a : v.run.placement) {
      if (a.node < 0 || a.node >= ready) continue;
      jobs_on[a.node].push_back(j);
      held[a.node] += HeldMilli(v.run.job, a);
      if (!movable) stays[a.node] = 1;
    }
  }
  // An idle managed node is retired soon anyway: a job moved there would save nothing.
  for (int n = 0; n < ready; ++n) {
    if (managed[n] >= 0 && jobs_on[n].empty()) BlockNode(room, n);
  }
  std::vector<Candidate> candidates;
  for (int n = 0; n < ready; ++n) {
    if (managed[n] < 0 || jobs_on[n].empty() || stays[n] || (*ctx.needed)[n]) continue;
    const int gpus = std::max(1, room.spec(n).num_gpus);
    candidates.push_back({static_cast<double>(held[n]) / (gpus * core::kGpuMilli), n});
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.utilization != b.utilization ? a.utilization < b.utilization : a.node < b.node;
  });

  const size_t budget = static_cast<size_t>(std::max(1, managed_ready / 10));
  std::vector<uint8_t> target(static_cast<size_t>(ready), 0);  // took a moved job this pass
  // Whole free GPUs on the nodes that may take a job: a cheap bound tried before a placement.
  auto free_gpus = [&](int n) { return n < ready ? room.state(n).full_free_gpus : 0; };
  int64_t total_free = 0;
  for (int n = 0; n < ready; ++n) total_free += free_gpus(n);
  sched::Placer placer(room, placement, {});  // follows `room` through its change journal
  int trials = 0;
  for (const Candidate& c : candidates) {
    if (out.size() >= budget || trials >= kMaxConsolidationTrials) break;
    const ManagedNode& m = nodes[managed[c.node]];
    const NodeGroup& g = groups[m.group];
    if (target[c.node] || keep[m.group] <= g.min) continue;
    // The saving and the move's cost, in seconds of the node's price.
    double horizon_s = 0, moved_gpu_s = 0;
    int64_t whole_gpus = 0;
    for (size_t j : jobs_on[c.node]) {
      const RunningJobView& v = running[j];
      const double left =
          std::isfinite(v.expected_remaining_s)
              ? v.expected_remaining_s
              : static_cast<double>(std::max<int64_t>(0, ctx.now - v.run.started_s));
      horizon_s = std::max(horizon_s, left);
      moved_gpu_s += static_cast<double>(HeldMilli(v.run.job, v.run.placement[0])) /
                     core::kGpuMilli * std::max(0.0, v.restart_overhead_s);
      if (v.run.job.gpu_milli >= core::kGpuMilli) whole_gpus += sched::GpusOf(v.run.placement);
    }
    const double net_s = horizon_s - moved_gpu_s / std::max(1, g.gpus);
    if (net_s < static_cast<double>(ctx.policy->consolidation_min_saving_s)) continue;
    if (whole_gpus > total_free - free_gpus(c.node)) continue;

    ++trials;
    std::vector<Taken> undo;
    BlockNode(room, c.node, &undo);
    std::vector<size_t> order = jobs_on[c.node];
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {  // largest first
      const auto& ja = running[a].run.job;
      const auto& jb = running[b].run.job;
      if (ja.total_gpus != jb.total_gpus) return ja.total_gpus > jb.total_gpus;
      return ja.id < jb.id;
    });
    bool fits = true;
    for (size_t j : order) {
      const sched::QueuedJob& job = running[j].run.job;
      auto where = sched::PlaceGang(room, placer, job, /*allow_spread=*/false, rng);
      if (!where) {
        fits = false;
        break;
      }
      for (const sched::Allocation& a : *where) {
        Take(room, a.node, sched::SliceSpec(job, std::popcount(a.gpus)), a.gpus, &undo);
      }
    }
    if (!fits) {
      for (auto it = undo.rbegin(); it != undo.rend(); ++it)
        room.Release(it->node, it->spec, it->gpus);
      continue;
    }
    total_free = 0;
    for (int n = 0; n < ready; ++n) total_free += free_gpus(n);
    for (const Taken& t : undo) {
      if (t.node != c.node) target[t.node] = 1;
    }
    --keep[m.group];
    Plan::Consolidation cons;
    cons.node = m.name;
    for (size_t j : order) cons.jobs.push_back(running[j].run.job.id);
    out.push_back(std::move(cons));
  }
  return out;
}

}  // namespace gpufleet::scale

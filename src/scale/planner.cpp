#include "scale/planner.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include "scale/consolidation.h"
#include "sched/gang_placement.h"
#include "sched/placer.h"
#include "sched/queued_job.h"

namespace gpufleet::scale {
namespace {

core::NodeSpec GroupNodeSpec(const NodeGroup& g, const std::string& name) {
  core::NodeSpec spec;
  spec.name = name;
  spec.cpu_milli = g.cpu_milli;
  spec.memory_mib = g.memory_mib;
  spec.num_gpus = g.gpus;
  spec.model = g.model;
  return spec;
}

// Jobs that ask the same of a node, in the same way, form a class: once one of them does not fit
// an estimate's nodes, none of the later ones does (nodes only fill up), so they are skipped.
struct ClassKey {
  int64_t cpu, memory;
  int gpu_milli, total_gpus, nodes;
  uint64_t models;
  bool restartable, waited;
  bool operator<(const ClassKey& o) const {
    return std::tie(cpu, memory, gpu_milli, total_gpus, nodes, models, restartable, waited) <
           std::tie(o.cpu, o.memory, o.gpu_milli, o.total_gpus, o.nodes, o.models,
                    o.restartable, o.waited);
  }
};

struct Candidate {
  const WaitingJob* job;
  int cls;
};

// What the planner knows of one class.
struct ClassInfo {
  bool restartable = false;
  bool on_demand_ok = false;  // not restartable, past the fallback wait, or no spot group fits
  int left = 0;               // members not yet served
};

// Places `jobs` (in order) on `cluster` with the scheduler's gang placement; returns the
// indices placed and marks the nodes used.
struct PackResult {
  std::vector<size_t> placed;
  std::vector<uint8_t> node_used;
  int64_t used_gpu_milli = 0;
};

// `eligible[c]`: class c may go on these nodes; `served[i]`: job i needs nothing more. Stops
// early once every eligible class with a job left has failed to fit.
PackResult Pack(core::ClusterSnapshot& cluster, const std::vector<Candidate>& jobs,
                const std::vector<uint8_t>& eligible, const std::vector<ClassInfo>& info,
                const std::vector<uint8_t>& served, const sched::PlacementPolicy& policy,
                core::Rng& rng) {
  PackResult out;
  out.node_used.assign(static_cast<size_t>(cluster.size()), 0);
  if (cluster.size() == 0) return out;
  sched::Placer placer(cluster, policy, {});
  std::vector<uint8_t> failed(eligible.size(), 0);
  int live = 0;
  for (size_t c = 0; c < eligible.size(); ++c) live += eligible[c] && info[c].left > 0;
  for (size_t i = 0; i < jobs.size() && live > 0; ++i) {
    const Candidate& c = jobs[i];
    if (served[i] || !eligible[c.cls] || failed[c.cls]) continue;
    const sched::QueuedJob& job = c.job->job;
    auto where = sched::PlaceGang(cluster, placer, job, /*allow_spread=*/false, rng);
    if (!where) {
      failed[c.cls] = 1;
      --live;
      continue;
    }
    for (const auto& a : *where) {
      cluster.Allocate(a.node, sched::SliceSpec(job, std::popcount(a.gpus)), a.gpus);
      out.node_used[a.node] = 1;
    }
    out.used_gpu_milli += job.gpu_milli < core::kGpuMilli
                              ? job.gpu_milli
                              : int64_t{job.total_gpus} * core::kGpuMilli;
    out.placed.push_back(i);
  }
  return out;
}

// A copy of `cluster` with `extra` empty nodes appended (what is used on the original is used
// on the copy too).
core::ClusterSnapshot WithExtraNodes(const core::ClusterSnapshot& cluster,
                                     const std::vector<core::NodeSpec>& extra) {
  if (extra.empty()) return cluster;
  std::vector<core::NodeSpec> specs;
  specs.reserve(static_cast<size_t>(cluster.size()) + extra.size());
  for (int n = 0; n < cluster.size(); ++n) specs.push_back(cluster.spec(n));
  specs.insert(specs.end(), extra.begin(), extra.end());
  core::ClusterSnapshot copy(std::move(specs));
  for (int n = 0; n < cluster.size(); ++n) {
    const core::NodeSpec& spec = cluster.spec(n);
    const core::NodeState& s = cluster.state(n);
    core::JobSpec host;
    host.cpu_milli = spec.cpu_milli - s.cpu_free;
    host.memory_mib = spec.memory_mib - s.memory_free;
    if (host.cpu_milli > 0 || host.memory_mib > 0) copy.Allocate(n, host, 0);
    for (int g = 0; g < spec.num_gpus; ++g) {
      const int used = core::kGpuMilli - s.gpu_free[g];
      if (used <= 0) continue;
      core::JobSpec gpu;
      gpu.num_gpu = 1;
      gpu.gpu_milli = used;
      copy.Allocate(n, gpu, core::GpuMask{1} << g);
    }
  }
  return copy;
}

// The most new nodes `jobs` could need in `group` (a bound for the estimate's size).
int64_t NodesNeededBound(const NodeGroup& g, const sched::QueuedJob& job) {
  if (job.nodes > 1) return job.nodes;
  if (job.gpu_milli < core::kGpuMilli) return 1;
  return (job.total_gpus + g.gpus - 1) / g.gpus;
}

// A job without a node count that asks more whole GPUs than any node the scheduler will know
// has (`most_node_gpus`: the cluster's, lost and busy nodes included, and the new ones):
// `PlaceGang` spreads only such a job over the fewest nodes, so only its fit is judged that way.
// (Judged by the group's nodes alone, a job one GPU larger than a small group's node but smaller
// than a busy big node was bought small nodes for, pass after pass, which the scheduler never
// spread it over.)
bool NeedsSpread(int most_node_gpus, const sched::QueuedJob& job) {
  return sched::LargerThanEveryNode(job, job.total_gpus, most_node_gpus);
}

struct Offering {
  int group;
  bool spot;
};

struct Estimate {
  int full_nodes = 0;  // > 0: a probe; the full estimate would take this many nodes
  int nodes = 0;
  std::vector<size_t> placed;  // indices into the candidates
  int64_t used_gpu_milli = 0;
};

}  // namespace

double SpendPerHour(const std::vector<NodeGroup>& groups, const std::vector<ManagedNode>& nodes) {
  double spend = 0;
  for (const auto& n : nodes) {
    if (n.group >= 0 && n.group < static_cast<int>(groups.size())) {
      spend += groups[n.group].Price(n.spot);
    }
  }
  return spend;
}

Plan PlanScaling(const PlanInput& input, const sched::PlacementPolicy& placement_policy,
                 core::Rng& rng) {
  const std::vector<NodeGroup>& groups = *input.groups;
  const ScalePolicy& policy = input.policy;
  const core::GpuCatalog& catalog = core::GpuCatalog::Builtin();
  Plan plan;
  plan.spend_per_hour = SpendPerHour(groups, input.nodes);
  double spend = plan.spend_per_hour;
  const int num_groups = static_cast<int>(groups.size());
  std::vector<int> count(static_cast<size_t>(num_groups), 0);
  for (const auto& n : input.nodes) {
    if (n.group >= 0 && n.group < num_groups) ++count[n.group];
  }
  // How many more nodes of price `price` the spend cap allows.
  auto cap_allows = [&](double price) -> int64_t {
    if (!(price > 0) || std::isinf(policy.max_spend_per_hour)) return INT64_MAX;
    const double room = policy.max_spend_per_hour - spend;
    return room < 0 ? 0 : static_cast<int64_t>(std::floor(room / price + 1e-9));
  };
  auto add_order = [&](int group, bool spot, int n, const std::vector<sched::JobId>& jobs) {
    for (auto& o : plan.create) {
      if (o.group == group && o.spot == spot) {
        o.count += n;
        o.for_jobs.insert(o.for_jobs.end(), jobs.begin(), jobs.end());
        count[group] += n;
        spend += n * groups[group].Price(spot);
        return;
      }
    }
    plan.create.push_back({group, spot, n, jobs});
    count[group] += n;
    spend += n * groups[group].Price(spot);
  };

  // Groups below their minimum (on-demand: a floor is capacity that must stay).
  for (int g = 0; g < num_groups; ++g) {
    if (count[g] >= groups[g].min) continue;
    const int64_t n = std::min<int64_t>(groups[g].min - count[g], cap_allows(groups[g].price_per_hour));
    if (n > 0) add_order(g, false, static_cast<int>(n), {});
  }

  // The jobs that have waited long enough, most important first.
  std::vector<const WaitingJob*> order;
  for (const auto& w : input.waiting) {
    if (input.now - w.job.waiting_since_s >= policy.scale_up_delay_s) order.push_back(&w);
  }
  std::sort(order.begin(), order.end(), [](const WaitingJob* a, const WaitingJob* b) {
    if (a->job.priority != b->job.priority) return a->job.priority > b->job.priority;
    if (a->job.waiting_since_s != b->job.waiting_since_s) {
      return a->job.waiting_since_s < b->job.waiting_since_s;
    }
    return a->job.id < b->job.id;
  });
  std::map<ClassKey, int> class_ids;
  std::vector<ClassInfo> info;
  std::vector<Candidate> candidates;
  candidates.reserve(order.size());
  for (const WaitingJob* w : order) {
    const sched::QueuedJob& j = w->job;
    const bool waited = input.now - j.waiting_since_s >= policy.spot_fallback_s;
    const ClassKey key{j.cpu_milli_per_gpu, j.memory_mib_per_gpu, j.gpu_milli, j.total_gpus,
                       j.nodes, j.gpu_models.bits(), w->restartable, waited};
    auto [it, added] = class_ids.emplace(key, static_cast<int>(info.size()));
    if (added) info.push_back({w->restartable, !w->restartable || waited, 0});
    ++info[it->second].left;
    candidates.push_back({w, it->second});
  }
  const size_t classes = info.size();

  // 1. What the fleet has: free capacity on ready nodes, booting nodes as empty ones.
  std::vector<core::NodeSpec> booting;
  for (const ManagedNode& n : input.nodes) {
    if (n.ready || n.leaving || n.group < 0 || n.group >= num_groups) continue;
    booting.push_back(GroupNodeSpec(groups[n.group], n.name));
  }
  for (const auto& o : plan.create) {  // the floor's new nodes
    for (int k = 0; k < o.count; ++k) booting.push_back(GroupNodeSpec(groups[o.group], ""));
  }
  static const core::ClusterSnapshot kEmpty;
  const core::ClusterSnapshot& ready = input.cluster != nullptr ? *input.cluster : kEmpty;
  std::vector<uint8_t> needed_cluster_node(static_cast<size_t>(ready.size()), 0);
  std::vector<uint8_t> served(candidates.size(), 0);
  auto serve = [&](size_t i) {
    served[i] = 1;
    --info[candidates[i].cls].left;
  };
  // What the fleet has once the waiting jobs that fit it are placed (consolidation reads it).
  core::ClusterSnapshot have = WithExtraNodes(ready, booting);
  {
    // A spot node is for restartable jobs only; the snapshot cannot say so per node, so the
    // estimate is optimistic there (the scheduler decides for real).
    const std::vector<uint8_t> all(classes, 1);
    PackResult r = Pack(have, candidates, all, info, served, placement_policy, rng);
    for (size_t i : r.placed) serve(i);
    for (int n = 0; n < ready.size(); ++n) needed_cluster_node[n] = r.node_used[n];
  }

  // Which classes each group can ever hold (its `max` nodes, empty).
  std::vector<const sched::QueuedJob*> example(classes, nullptr);
  for (const Candidate& c : candidates) {
    if (example[c.cls] == nullptr) example[c.cls] = &c.job->job;
  }
  std::vector<std::vector<uint8_t>> fits(static_cast<size_t>(num_groups),
                                         std::vector<uint8_t>(classes, 0));
  for (int g = 0; g < num_groups; ++g) {
    const core::NodeSpec one = GroupNodeSpec(groups[g], groups[g].name);
    for (size_t c = 0; c < classes; ++c) {
      if (info[c].left == 0) continue;
      const int64_t need = NodesNeededBound(groups[g], *example[c]);
      bool ok = need <= groups[g].max;
      if (ok) {
        std::vector<core::NodeSpec> specs(static_cast<size_t>(need), one);
        const bool spread =
            NeedsSpread(std::max(groups[g].gpus, ready.max_node_gpus()), *example[c]);
        ok = !sched::NeverFits(*example[c], specs, spread).has_value();
      }
      fits[g][c] = ok;
    }
  }
  // Every job left either fits some group or never will.
  std::vector<uint8_t> fits_any(classes, 0);
  for (int g = 0; g < num_groups; ++g) {
    for (size_t c = 0; c < classes; ++c) fits_any[c] = fits_any[c] || fits[g][c];
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (served[i] || fits_any[candidates[i].cls]) continue;
    // Nodes the fleet has (a busy one, say) will hold it: it waits for them, with nothing to buy,
    // and is not unservable.
    if (!sched::NeverFits(candidates[i].job->job, ready, {}, false)) {
      serve(i);
      continue;
    }
    std::vector<core::NodeSpec> specs;
    for (int g = 0; g < num_groups; ++g) {
      const int64_t k = std::clamp<int64_t>(NodesNeededBound(groups[g], candidates[i].job->job), 1,
                                            std::max(1, groups[g].max));
      for (int64_t n = 0; n < k; ++n) specs.push_back(GroupNodeSpec(groups[g], groups[g].name));
    }
    // A job without a node count that no one node holds is spread over the fewest nodes (what
    // `PlaceGang` does for it); judge it that way.
    int most_gpus = ready.max_node_gpus();
    for (int g = 0; g < num_groups; ++g) most_gpus = std::max(most_gpus, groups[g].gpus);
    const bool spread = NeedsSpread(most_gpus, candidates[i].job->job);
    auto why = sched::NeverFits(candidates[i].job->job, specs, spread);
    plan.unservable.emplace_back(candidates[i].job->job.id,
                                 why ? why->message : "no group's max allows its nodes");
    serve(i);  // nothing to buy for it
  }

  // 2. Rounds: estimate every offering on the jobs left, buy the best, repeat.
  auto spot_open = [&](int g) {
    return groups[g].HasSpot() &&
           !(static_cast<size_t>(g) < input.spot_unavailable.size() && input.spot_unavailable[g]);
  };
  // Spot first only where some group could give a job spot capacity; otherwise (and once it
  // has waited `spot_fallback_s`) on-demand at once.
  for (size_t c = 0; c < classes; ++c) {
    if (info[c].on_demand_ok) continue;
    bool spot_fits = false;
    for (int g = 0; g < num_groups && !spot_fits; ++g) spot_fits = fits[g][c] && groups[g].HasSpot();
    info[c].on_demand_ok = !spot_fits;
  }
  std::vector<Offering> offerings;
  for (int g = 0; g < num_groups; ++g) {
    if (spot_open(g)) offerings.push_back({g, true});
    offerings.push_back({g, false});
  }
  std::vector<std::vector<uint8_t>> eligible(offerings.size());
  for (size_t oi = 0; oi < offerings.size(); ++oi) {
    const Offering& o = offerings[oi];
    eligible[oi].assign(classes, 0);
    for (size_t c = 0; c < classes; ++c) {
      eligible[oi][c] =
          fits[o.group][c] && (o.spot ? info[c].restartable : info[c].on_demand_ok);
    }
  }
  // The waiting jobs offering `oi` may take, packed onto `k` new, empty nodes of its group.
  auto estimate_on = [&](size_t oi, int k) {
    ++plan.estimates;
    const NodeGroup& group = groups[offerings[oi].group];
    core::ClusterSnapshot hypothetical(
        std::vector<core::NodeSpec>(static_cast<size_t>(k), GroupNodeSpec(group, group.name)));
    return Pack(hypothetical, candidates, eligible[oi], info, served, placement_policy, rng);
  };
  for (int round = 0; round < 4 * static_cast<int>(offerings.size()) + 4; ++round) {
    int best = -1;
    Estimate best_est;
    double best_score = 0, best_tie = 0;
    for (size_t oi = 0; oi < offerings.size(); ++oi) {
      const Offering& o = offerings[oi];
      const NodeGroup& g = groups[o.group];
      const int64_t room = std::min<int64_t>(g.max - count[o.group], cap_allows(g.Price(o.spot)));
      if (room <= 0) continue;
      // The most nodes the jobs left could use here: a bound on the estimate's size.
      int64_t bound = 0;
      for (size_t c = 0; c < classes && bound < room; ++c) {
        if (eligible[oi][c] && info[c].left > 0) {
          bound += NodesNeededBound(g, *example[c]) * info[c].left;
        }
      }
      const int full = static_cast<int>(std::min(room, bound));
      if (full <= 0) continue;
      // Offerings are compared on a probe of `probe_nodes` (the efficiency of the first nodes
      // the most important jobs fill); only the winner is estimated at full size.
      const int k = input.probe_nodes > 0 ? std::min(full, input.probe_nodes) : full;
      PackResult r = estimate_on(oi, k);
      if (r.placed.empty()) continue;
      Estimate est;
      est.full_nodes = k < full ? full : 0;
      for (uint8_t u : r.node_used) est.nodes += u;
      est.placed = std::move(r.placed);
      est.used_gpu_milli = r.used_gpu_milli;
      const double capacity = static_cast<double>(est.nodes) * g.gpus * core::kGpuMilli;
      const double waste = 1.0 - static_cast<double>(est.used_gpu_milli) / capacity;
      const double useful = static_cast<double>(est.used_gpu_milli) / core::kGpuMilli *
                            catalog.model(g.model).relative_speed;
      const double per_useful = est.nodes * g.Price(o.spot) / std::max(useful, 1e-9);
      double score = 0, tie = 0;  // smaller is better
      switch (policy.expander) {
        case Expander::kCheapest:
          score = per_useful;
          tie = -static_cast<double>(est.placed.size());
          break;
        case Expander::kLeastWaste:
          score = waste;
          tie = per_useful;
          break;
        case Expander::kPriority:
          score = -g.priority;
          tie = per_useful;
          break;
      }
      if (best < 0 || score < best_score - 1e-12 ||
          (std::fabs(score - best_score) <= 1e-12 && tie < best_tie)) {
        best = static_cast<int>(oi);
        best_est = std::move(est);
        best_score = score;
        best_tie = tie;
      }
    }
    if (best < 0) break;
    if (best_est.full_nodes > 0) {  // the probe was cut short: estimate the winner in full
      PackResult r = estimate_on(static_cast<size_t>(best), best_est.full_nodes);
      best_est.nodes = 0;
      for (uint8_t u : r.node_used) best_est.nodes += u;
      best_est.placed = std::move(r.placed);
      best_est.used_gpu_milli = r.used_gpu_milli;
    }
    std::vector<sched::JobId> ids;
    for (size_t i : best_est.placed) {
      serve(i);
      ids.push_back(candidates[i].job->job.id);
    }
    add_order(offerings[best].group, offerings[best].spot, best_est.nodes, ids);
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!served[i]) plan.capped.push_back(candidates[i].job->job.id);
  }

  // 3. Scale-down: idle past the unneeded time, not needed by a waiting job, above the floor.
  std::vector<int> keep = count;
  for (const ManagedNode& n : input.nodes) {
    if (n.leaving && n.group >= 0 && n.group < num_groups) --keep[n.group];
  }
  for (const ManagedNode& n : input.nodes) {
    if (!n.ready || n.leaving || n.idle_since_s < 0 || n.group < 0 || n.group >= num_groups) {
      continue;
    }
    if (input.now - n.idle_since_s < policy.scale_down_unneeded_s) continue;
    if (n.cluster_index >= 0 && n.cluster_index < ready.size() &&
        needed_cluster_node[n.cluster_index]) {
      continue;
    }
    if (keep[n.group] <= groups[n.group].min) continue;
    --keep[n.group];
    plan.retire.push_back(n.name);
    spend -= groups[n.group].Price(n.spot);
  }

  // 4. Consolidation: busy nodes whose jobs can move to other ready nodes' free room.
  if (policy.consolidation && !input.running.empty()) {
    ConsolidationContext ctx;
    ctx.groups = &groups;
    ctx.policy = &policy;
    ctx.nodes = &input.nodes;
    ctx.running = &input.running;
    ctx.retiring = &plan.retire;
    ctx.now = input.now;
    ctx.ready_nodes = ready.size();
    ctx.needed = &needed_cluster_node;
    plan.consolidate = PlanConsolidation(ctx, std::move(have), keep, placement_policy, rng);
    for (const Plan::Consolidation& c : plan.consolidate) {
      for (const ManagedNode& n : input.nodes) {
        if (n.name == c.node) spend -= groups[n.group].Price(n.spot);
      }
    }
  }
  plan.spend_per_hour_after = spend;
  return plan;
}

}  // namespace gpufleet::scale

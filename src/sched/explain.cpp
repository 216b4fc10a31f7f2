#include "sched/explain.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <limits>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "core/check.h"
#include "core/gpu_catalog.h"
#include "sched/gang_placement.h"
#include "sched/placer.h"
#include "sched/queued_job.h"

namespace gpufleet::sched {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// What placement sees of a job: jobs of one shape fit, or not, alike.
// (Restartable or not: they may count on different growth nodes.)
using Shape = std::tuple<int, int, int, uint64_t, int64_t, int64_t, bool>;
Shape ShapeOf(const QueuedJob& j) {
  return {j.total_gpus,         j.nodes,      j.gpu_milli, j.gpu_models.bits(), j.cpu_milli_per_gpu,
          j.memory_mib_per_gpu, j.restartable};
}

bool Whole(const QueuedJob& j) { return j.gpu_milli >= core::kGpuMilli; }
int PerNode(const QueuedJob& j) { return j.nodes > 1 ? j.total_gpus / j.nodes : j.total_gpus; }
bool Spreads(const QueuedJob& j, bool allow_spread) {
  return allow_spread && j.nodes <= 1 && Whole(j) && j.total_gpus > 1;
}

// Whole free GPUs of `s` a slice of `job` may take, as its CPU and memory allow.
int UsableGpus(const core::NodeState& s, const QueuedJob& job) {
  if (!job.gpu_models.Contains(s.model)) return 0;
  int64_t usable = s.full_free_gpus;
  if (job.cpu_milli_per_gpu > 0) usable = std::min(usable, s.cpu_free / job.cpu_milli_per_gpu);
  if (job.memory_mib_per_gpu > 0) usable = std::min(usable, s.memory_free / job.memory_mib_per_gpu);
  return static_cast<int>(usable);
}

// Whether node `s` alone could take its part of `job` (the test PlaceGang's placement makes).
bool NodeTakes(const core::NodeState& s, const QueuedJob& job, bool allow_spread) {
  if (!Whole(job)) return s.Fits(SliceSpec(job, 1));
  if (Spreads(job, allow_spread)) return UsableGpus(s, job) > 0;
  return UsableGpus(s, job) >= PerNode(job);
}

// "4 GPUs", or "4 x A100-80GB" when the job names models.
std::string GpusText(const QueuedJob& j, int gpus) {
  if (j.gpu_models.IsAll()) return std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs");
  return std::to_string(gpus) + " x " + core::GpuCatalog::Builtin().FormatSpec(j.gpu_models);
}

std::string ExtrasText(const QueuedJob& j, int gpus) {
  std::string out;
  if (j.cpu_milli_per_gpu > 0) {
    const double cpus = static_cast<double>(j.cpu_milli_per_gpu * gpus) / 1000;
    char text[32];
    std::snprintf(text, sizeof text, "%g CPUs", cpus);
    out += text;
  }
  if (j.memory_mib_per_gpu > 0) {
    out += (out.empty() ? "" : ", ") + std::to_string(j.memory_mib_per_gpu * gpus) + " MiB";
  }
  return out.empty() ? "" : " with " + out;
}

// "needs 4 x A100-80GB GPUs on one node: no node has 4 free now (at most 2)": what the job asks,
// and what the cluster has free of it now (`work`).
std::string NeedText(const QueuedJob& j, const core::ClusterSnapshot& work, bool allow_spread) {
  if (!Whole(j)) {
    char share[32];
    std::snprintf(share, sizeof share, "%.2f", static_cast<double>(j.gpu_milli) / core::kGpuMilli);
    return std::string("needs ") + share + " of one " +
           (j.gpu_models.IsAll() ? ""
                                 : core::GpuCatalog::Builtin().FormatSpec(j.gpu_models) + " ") +
           "GPU" + ExtrasText(j, 1) + ": no node has that free now";
  }
  int most = 0, nodes_with = 0, gpu_only = 0;
  int64_t total = 0;
  for (const core::NodeState& s : work.states()) {
    const int usable = UsableGpus(s, j);
    most = std::max(most, usable);
    total += usable;
    nodes_with += usable >= PerNode(j);
    gpu_only += j.gpu_models.Contains(s.model) && s.full_free_gpus >= PerNode(j);
  }
  if (Spreads(j, allow_spread)) {
    return "needs " + GpusText(j, j.total_gpus) + ExtrasText(j, 1) +
           " per GPU on any nodes: " + std::to_string(total) + " free now";
  }
  if (j.nodes > 1) {
    return "needs " + std::to_string(j.nodes) + " nodes with " + GpusText(j, PerNode(j)) +
           ExtrasText(j, PerNode(j)) + " free each, all at once: " + std::to_string(nodes_with) +
           (nodes_with == 1 ? " node has" : " nodes have") + " that free now";
  }
  std::string out =
      "needs " + GpusText(j, j.total_gpus) + ExtrasText(j, j.total_gpus) + " on one node: ";
  if (gpu_only > 0) {
    return out + std::to_string(gpu_only) + (gpu_only == 1 ? " node has" : " nodes have") +
           " the GPUs free but not the CPU or memory";
  }
  return out + "no node has " + std::to_string(j.total_gpus) + " free now" +
         (most > 0 ? " (at most " + std::to_string(most) + ")" : "");
}

std::string MinutesText(double s) {
  const int64_t minutes = static_cast<int64_t>(std::ceil(std::max(s, 0.0) / 60));
  if (minutes < 120) return std::to_string(std::max<int64_t>(minutes, 1)) + " min";
  return std::to_string(minutes / 60) + " h " + std::to_string(minutes % 60) + " min";
}

// When a running job is expected to end, in seconds on the caller's clock, and from what.
struct End {
  double at_s = kInf;
  EndBasis basis = EndBasis::kUnknown;
};
End EndOf(const ExplainRunning& r) {
  End e;
  const double start = static_cast<double>(r.run.started_s);
  if (r.time_limit_s > 0) e = {start + r.time_limit_s, EndBasis::kTimeLimit};
  if (r.estimate_s > 0 && start + r.estimate_s < e.at_s)
    e = {start + r.estimate_s, EndBasis::kEstimate};
  return e;
}

struct FitsAfter {
  bool searched = false;
  bool never = false;  // not even with every running job ended
  JobId job = 0;
  End end;
};

// The "fits after" search: running jobs leave `base` in `ends` order until `job` can be placed.
FitsAfter SearchFitsAfter(const QueuedJob& job, const core::ClusterSnapshot& base,
                          std::span<const ExplainRunning> running,
                          const std::vector<std::pair<End, size_t>>& ends, const ExplainInput& in,
                          core::Rng& rng) {
  FitsAfter out;
  out.searched = true;
  core::ClusterSnapshot copy = base;
  Placer placer(copy, *in.placement_policy, std::span<const uint32_t>());
  // Nodes that could take their part now, kept current as jobs leave: the placement is tried only
  // when the cheap test passes.
  std::vector<uint8_t> takes(copy.size(), 0);
  int taking = 0;
  int64_t free_total = 0;  // usable whole GPUs, for spread jobs
  for (int n = 0; n < copy.size(); ++n) {
    takes[n] = NodeTakes(copy.state(n), job, in.allow_spread);
    taking += takes[n];
    free_total += UsableGpus(copy.state(n), job);
  }
  for (const auto& [end, i] : ends) {
    const RunningJob& r = running[i].run;
    bool touched = false;
    for (const Allocation& a : r.placement) {
      free_total -= UsableGpus(copy.state(a.node), job);
      copy.Release(a.node, SliceSpec(r.job, std::popcount(a.gpus)), a.gpus);
      free_total += UsableGpus(copy.state(a.node), job);
      const uint8_t now_takes = NodeTakes(copy.state(a.node), job, in.allow_spread);
      touched |= now_takes != 0;
      taking += now_takes - takes[a.node];
      takes[a.node] = now_takes;
    }
    bool may_fit = touched;
    if (job.nodes > 1) may_fit = taking >= job.nodes;
    if (Spreads(job, in.allow_spread)) may_fit = free_total >= job.total_gpus;
    if (may_fit && PlaceGang(copy, placer, job, in.allow_spread, rng)) {
      out.job = r.job.id;
      out.end = end;
      return out;
    }
  }
  out.never = true;
  return out;
}

// `hide_when`: say which job, but not when it ends nor from what (for a reader who may not see
// its prediction).
std::string FitsAfterText(const FitsAfter& f, int64_t now_s, bool hide_when) {
  if (!f.searched) return "";
  if (f.never) return "; does not fit even when every running job has ended (GPUs drained or held)";
  std::string out = "; would fit after job " + std::to_string(f.job) + " ends";
  if (hide_when) return out + " (when: not shown)";
  const double in_s = f.end.at_s - static_cast<double>(now_s);
  switch (f.end.basis) {
    case EndBasis::kTimeLimit:
      return out + (in_s <= 0 ? " (its time limit has passed: stopping)"
                              : " (time limit in " + MinutesText(in_s) + ")");
    case EndBasis::kEstimate:
      return out +
             (in_s <= 0 ? " (past its expected end)" : " (expected in " + MinutesText(in_s) + ")");
    case EndBasis::kUnknown:
      break;
  }
  return out + " (no time limit or estimate: unknown when)";
}

}  // namespace

namespace {

std::string Plural(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// What one queue holds and is owed (fair-share policies), as ScheduleFairShare counts it.
struct QueueUse {
  double gpus = 0;
  double quota = 0;
  JobId blocker = 0;  // its first waiting job that does not start (0: none yet)
};
double JobGpus(const QueuedJob& j) {
  return Whole(j) ? static_cast<double>(j.total_gpus)
                  : static_cast<double>(j.gpu_milli) / core::kGpuMilli;
}

}  // namespace

std::string_view WaitKindName(WaitKind kind) {
  switch (kind) {
    case WaitKind::kStarting:
      return "starting";
    case WaitKind::kFitsNow:
      return "fits_now";
    case WaitKind::kNoFitNow:
      return "no_fit_now";
    case WaitKind::kGangWaitingNodes:
      return "gang_waiting_nodes";
    case WaitKind::kBlockedByOrder:
      return "blocked_by_order";
    case WaitKind::kOverFairShare:
      return "over_fair_share";
    case WaitKind::kNeverFits:
      return "never_fits";
  }
  return "unknown";
}

std::string_view EndBasisName(EndBasis basis) {
  switch (basis) {
    case EndBasis::kTimeLimit:
      return "time_limit";
    case EndBasis::kEstimate:
      return "estimate";
    case EndBasis::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::vector<Explanation> ExplainQueue(const ExplainInput& in, core::Rng& rng) {
  GPUFLEET_CHECK(in.cluster != nullptr && in.queue_policy != nullptr &&
                 in.placement_policy != nullptr);
  const QueuePolicy& policy = *in.queue_policy;
  std::vector<Explanation> out;
  out.reserve(in.waiting.size());

  // The cluster once this pass's decisions are carried out.
  core::ClusterSnapshot work = *in.cluster;
  std::unordered_map<JobId, size_t> running_of;
  for (size_t i = 0; i < in.running.size(); ++i) running_of[in.running[i].run.job.id] = i;
  std::unordered_map<JobId, const QueuedJob*> waiting_of;
  for (const QueuedJob& j : in.waiting) waiting_of[j.id] = &j;
  std::unordered_set<JobId> starting, preempted;
  std::unordered_map<JobId, std::vector<JobId>> preempts_for;  // start -> the victims before it
  std::vector<JobId> victims;
  for (const Decision& d : in.decisions) {
    if (d.kind == Decision::Kind::kPreempt) {
      auto r = running_of.find(d.job);
      if (r == running_of.end()) continue;
      const RunningJob& run = in.running[r->second].run;
      for (const Allocation& a : run.placement) {
        work.Release(a.node, SliceSpec(run.job, std::popcount(a.gpus)), a.gpus);
      }
      preempted.insert(d.job);
      victims.push_back(d.job);
      continue;
    }
    auto w = waiting_of.find(d.job);
    if (w == waiting_of.end()) continue;
    for (const Allocation& a : d.placement) {
      work.Allocate(a.node, SliceSpec(*w->second, std::popcount(a.gpus)), a.gpus);
    }
    starting.insert(d.job);
    preempts_for[d.job] = victims;
  }

  // Running jobs in order of expected end (unknown ends last, the longest running first).
  std::vector<std::pair<End, size_t>> ends;
  for (size_t i = 0; i < in.running.size(); ++i) {
    if (preempted.count(in.running[i].run.job.id) == 0) ends.emplace_back(EndOf(in.running[i]), i);
  }
  std::sort(ends.begin(), ends.end(), [&](const auto& a, const auto& b) {
    if (a.first.at_s != b.first.at_s) return a.first.at_s < b.first.at_s;
    const RunningJob& ra = in.running[a.second].run;
    const RunningJob& rb = in.running[b.second].run;
    if (ra.started_s != rb.started_s) return ra.started_s < rb.started_s;
    return ra.job.id < rb.job.id;
  });

  // Fair share: each queue's GPUs held (running, less the preempted, plus the starting) and quota.
  std::map<std::string, QueueUse> queues;
  if (policy.FairShare()) {
    double total_weight = 0;
    auto weight_of = [&](const std::string& q) {
      if (in.queue_weights != nullptr) {
        if (auto w = in.queue_weights->find(q); w != in.queue_weights->end()) return w->second;
      }
      return in.default_queue_weight;
    };
    if (in.queue_weights != nullptr) {
      for (const auto& [q, w] : *in.queue_weights) queues[q];
    }
    for (const ExplainRunning& r : in.running) {
      if (preempted.count(r.run.job.id) == 0) queues[r.run.job.queue].gpus += JobGpus(r.run.job);
    }
    for (const QueuedJob& j : in.waiting) {
      QueueUse& q = queues[j.queue];
      if (starting.count(j.id) > 0) q.gpus += JobGpus(j);
    }
    for (const auto& [name, q] : queues) total_weight += weight_of(name);
    const double capacity = static_cast<double>(work.total_gpus());
    for (auto& [name, q] : queues) q.quota = capacity * weight_of(name) / total_weight;
  }

  Placer placer(work, *in.placement_policy, std::span<const uint32_t>());
  struct ShapeFacts {
    std::optional<core::Error> never;
    bool fits_now = false;
    std::string need;  // NeedText, when it does not fit now
    FitsAfter after;
  };
  std::map<Shape, ShapeFacts> shapes;
  int searches = 0;
  std::map<int, int> priorities_ahead;  // priority -> waiting jobs ahead with it
  JobId blocker = 0;                    // the first waiting job that does not start
  const Backfill backfill = policy.backfill();

  for (size_t k = 0; k < in.waiting.size(); ++k) {
    const QueuedJob& job = in.waiting[k];
    Explanation e;
    e.id = job.id;
    e.position = static_cast<int>(k) + 1;
    for (auto it = priorities_ahead.upper_bound(job.priority); it != priorities_ahead.end(); ++it) {
      e.higher_priority_ahead += it->second;
    }
    ++priorities_ahead[job.priority];
    const std::string behind =
        e.higher_priority_ahead > 0
            ? "behind " + Plural(e.higher_priority_ahead, "job", "jobs") + " of higher priority"
            : "";

    if (starting.count(job.id) > 0) {
      e.kind = WaitKind::kStarting;
      e.reason = "starting now";
      const std::vector<JobId>& v = preempts_for[job.id];
      for (size_t i = 0; i < v.size(); ++i) {
        e.reason += (i == 0 ? ", once the running job(s) it preempts have stopped: " : ", ") +
                    std::string("job ") + std::to_string(v[i]);
      }
      out.push_back(std::move(e));
      continue;
    }
    auto [it, added] = shapes.try_emplace(ShapeOf(job));
    ShapeFacts& f = it->second;
    if (added) {
      const std::span<const core::NodeSpec> growth = !job.restartable && in.growth_nodes_on_demand
                                                         ? *in.growth_nodes_on_demand
                                                         : in.growth_nodes;
      f.never = NeverFits(job, work, growth, in.allow_spread);
      if (!f.never) f.fits_now = PlaceGang(work, placer, job, in.allow_spread, rng).has_value();
      if (!f.never && !f.fits_now) f.need = NeedText(job, work, in.allow_spread);
    }
    if (!f.never && !f.fits_now && !f.after.searched && searches < in.max_fits_after_searches) {
      ++searches;
      f.after = SearchFitsAfter(job, work, in.running, ends, in, rng);
    }
    // A job that can never fit holds no reservation and blocks no order (Schedule passes over it).
    const JobId first_blocked = blocker;
    if (blocker == 0 && !f.never) blocker = job.id;
    QueueUse* queue = policy.FairShare() ? &queues[job.queue] : nullptr;
    const JobId queue_blocked = queue != nullptr ? queue->blocker : 0;
    if (queue != nullptr && queue->blocker == 0 && !f.never) queue->blocker = job.id;

    if (f.never) {
      e.kind = WaitKind::kNeverFits;
      e.reason = std::string("can never start on the nodes there are now") +
                 (in.growth_nodes.empty() ? "" : " or the fleet may grow by") + ": " +
                 f.never->message + "; it holds no other job back";
    } else if (f.fits_now) {
      if (queue != nullptr && queue_blocked != 0) {
        e.kind = WaitKind::kBlockedByOrder;
        e.reason = "fits now, but its queue '" + job.queue + "' starts its jobs in order and job " +
                   std::to_string(queue_blocked) + " ahead in it cannot start yet";
      } else if (queue == nullptr && first_blocked != 0 && backfill == Backfill::kNone) {
        e.kind = WaitKind::kBlockedByOrder;
        e.reason = (behind.empty() ? "fits now" : behind + "; it fits now") + ", but the " +
                   std::string(policy.Name()) + " policy starts jobs in strict order and job " +
                   std::to_string(first_blocked) + " ahead of it cannot start yet";
      } else if (queue == nullptr && first_blocked != 0 && backfill == Backfill::kEasy) {
        e.kind = WaitKind::kBlockedByOrder;
        e.reason = (behind.empty() ? "fits now" : behind + "; it fits now") +
                   ", but starting it could delay job " + std::to_string(first_blocked) +
                   ", which holds the backfill reservation (a time limit ending before that "
                   "reservation would let it start)";
      } else {
        e.kind = WaitKind::kFitsNow;
        e.reason = "fits now: starts at a coming scheduling pass";
      }
    } else {
      e.kind = job.nodes > 1 ? WaitKind::kGangWaitingNodes : WaitKind::kNoFitNow;
      e.reason = f.need;
      if (queue != nullptr && queue->gpus + JobGpus(job) > queue->quota + 1e-9) {
        e.kind = WaitKind::kOverFairShare;
        char held[128];
        std::snprintf(held, sizeof held,
                      "it holds %g GPUs of its %.3g-GPU share and this job asks %g", queue->gpus,
                      queue->quota, JobGpus(job));
        e.reason = "queue '" + job.queue + "' would go over its fair share (" + held +
                   "): it may only borrow idle GPUs, and none fit: " + f.need;
      }
      e.reason_end_hidden = e.reason + FitsAfterText(f.after, in.now_s, true);
      e.reason += FitsAfterText(f.after, in.now_s, false);
      if (!behind.empty()) {
        e.reason += "; " + behind;
        e.reason_end_hidden += "; " + behind;
      }
      if (f.after.searched && !f.after.never) {
        e.fits_after_job = f.after.job;
        e.fits_after_basis = f.after.end.basis;
        if (std::isfinite(f.after.end.at_s)) {
          e.fits_after_s = std::max(0.0, f.after.end.at_s - static_cast<double>(in.now_s));
        }
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace gpufleet::sched

// Scheduler::ScheduleFairShare: the fair-share pass (see queue_policies/fair_share.cpp).
#include <algorithm>
#include <bit>
#include <optional>
#include <unordered_map>

#include "core/check.h"
#include "sched/elastic.h"
#include "sched/gang_placement.h"
#include "sched/placer.h"
#include "sched/queued_job.h"
#include "sched/schedule.h"

namespace gpufleet::sched {
namespace {

// What one queue holds and is owed during a pass.
struct QueueShare {
  double weight = 1;
  double quota_gpus = 0;  // weight's share of the cluster's GPUs
  double gpus = 0;        // held now (whole GPUs; a shared GPU counts its fraction)
  double cpu_milli = 0;
  double memory_mib = 0;
  // Waiting jobs in the policy's order (the Scheduler's per-queue index; no copy per pass).
  const std::set<Scheduler::Entry>* waiting = nullptr;
  std::set<Scheduler::Entry>::const_iterator next;  // first waiting job not yet placed
  bool HasNext() const { return waiting != nullptr && next != waiting->end(); }
  bool blocked = false;  // its next job cannot start in this pass
};

double JobGpus(const QueuedJob& job) {
  return job.gpu_milli >= core::kGpuMilli ? static_cast<double>(job.total_gpus)
                                          : static_cast<double>(job.gpu_milli) / core::kGpuMilli;
}

// A running job as its queue's share counts it: what it holds (an elastic job may hold fewer GPUs
// than it asks).
QueuedJob AsHeld(const RunningJob& r) {
  return IsElastic(r.job) ? SizedTo(r.job, GpusOf(r.placement)) : r.job;
}

void Add(QueueShare& q, const QueuedJob& job, double sign) {
  const double gpus = JobGpus(job);
  const double per = static_cast<double>(std::max(job.total_gpus, 1));
  q.gpus += sign * gpus;
  q.cpu_milli += sign * static_cast<double>(job.cpu_milli_per_gpu) * per;
  q.memory_mib += sign * static_cast<double>(job.memory_mib_per_gpu) * per;
}

}  // namespace

std::vector<Decision> Scheduler::ScheduleFairShare(const core::ClusterSnapshot& cluster,
                                                   std::span<const RunningJob> running,
                                                   core::Rng& rng) const {
  std::vector<Decision> decisions;
  // Capacity of each resource, for dominant shares.
  double capacity_gpus = 0, capacity_cpu = 0, capacity_memory = 0;
  for (int n = 0; n < cluster.size(); ++n) {
    capacity_gpus += cluster.spec(n).num_gpus;
    capacity_cpu += static_cast<double>(cluster.spec(n).cpu_milli);
    capacity_memory += static_cast<double>(cluster.spec(n).memory_mib);
  }
  if (capacity_gpus <= 0) return decisions;

  std::map<std::string, QueueShare> queues;
  auto queue_of = [&](const std::string& name) -> QueueShare& {
    auto [it, added] = queues.try_emplace(name);
    if (added) {
      auto w = queue_weights_.find(name);
      it->second.weight = w != queue_weights_.end() ? w->second : default_queue_weight_;
    }
    return it->second;
  };
  for (const auto& [name, weight] : queue_weights_) queue_of(name);
  for (size_t i = 0; i < running.size(); ++i)
    Add(queue_of(running[i].job.queue), AsHeld(running[i]), +1);
  for (const auto& [name, entries] : queue_entries_) {
    QueueShare& q = queue_of(name);
    q.waiting = &entries;
    q.next = entries.begin();
  }
  double total_weight = 0;
  for (const auto& [name, q] : queues) total_weight += q.weight;
  for (auto& [name, q] : queues) q.quota_gpus = capacity_gpus * q.weight / total_weight;

  // DRF: a queue's dominant share over its weight; the smallest is served first.
  auto share = [&](const QueueShare& q) {
    const double dominant =
        std::max({q.gpus / capacity_gpus, capacity_cpu > 0 ? q.cpu_milli / capacity_cpu : 0.0,
                  capacity_memory > 0 ? q.memory_mib / capacity_memory : 0.0});
    return dominant / q.weight;
  };

  core::ClusterSnapshot work = cluster;
  Placer placer(work, placement_policy_, std::span<const uint32_t>());
  std::vector<char> preempted(running.size(), 0);
  auto free_gpus = [&] {
    int64_t free = 0;
    for (const auto& s : work.states()) free += s.full_free_gpus;
    return free;
  };
  for (;;) {
    QueueShare* pick = nullptr;
    for (auto& [name, q] : queues) {
      if (q.blocked || !q.HasNext()) continue;
      if (pick == nullptr) {
        pick = &q;
        continue;
      }
      const double a = share(q), b = share(*pick);
      if (a < b || (a == b && *q.next < *pick->next)) {
        pick = &q;
      }
    }
    if (pick == nullptr) break;
    QueueShare& q = *pick;
    // An elastic job runs at its fewest GPUs here: fair share neither grows nor shrinks jobs.
    const QueuedJob& asked = order_.at(*q.next);
    const QueuedJob job = IsElastic(asked) ? SizedTo(asked, asked.min_gpus) : asked;
    const bool whole = job.gpu_milli >= core::kGpuMilli;
    std::optional<std::vector<Allocation>> placement;
    if (!whole || job.total_gpus <= free_gpus()) {
      placement = PlaceGang(work, placer, job, allow_spread_, rng);
    }
    // Reclaim: a queue that stays within its quota with this job takes lent GPUs back from
    // queues above theirs, the most recently started jobs first.
    if (!placement && q.gpus + JobGpus(job) <= q.quota_gpus + 1e-9) {
      std::vector<size_t> candidates;
      for (size_t i = 0; i < running.size(); ++i) {
        const QueueShare& owner = queues.at(running[i].job.queue);
        if (!preempted[i] && &owner != &q && owner.gpus > owner.quota_gpus + 1e-9) {
          candidates.push_back(i);
        }
      }
      std::sort(candidates.begin(), candidates.end(), [&](size_t a, size_t b) {
        if (running[a].started_s != running[b].started_s) {
          return running[a].started_s > running[b].started_s;
        }
        return running[a].job.id > running[b].job.id;
      });
      // Usage as the victims leave, so a lender is not cut below its own quota's worth.
      std::unordered_map<const QueueShare*, double> left;
      auto still_borrowing = [&](size_t i) {
        const QueueShare& owner = queues.at(running[i].job.queue);
        auto [it, added] = left.try_emplace(&owner, owner.gpus);
        if (it->second <= owner.quota_gpus + 1e-9) return false;
        it->second -= JobGpus(running[i].job);
        return true;
      };
      auto plan = PlanPreemption(work, placer, job, running, candidates, still_borrowing,
                                 allow_spread_, rng);
      if (plan) {
        for (size_t i : plan->victims) {
          preempted[i] = 1;
          Add(queues.at(running[i].job.queue), AsHeld(running[i]), -1);
          decisions.push_back(
              Decision{Decision::Kind::kPreempt, running[i].job.id, running[i].placement});
        }
        placement = std::move(plan->placement);
      }
    }
    if (!placement) {
      // First come, first served within the queue; but a job that no nodes of this cluster could
      // ever hold is passed over, or it would stop its queue for good.
      if (NeverFits(job, cluster, GrowthNodesFor(job), allow_spread_)) {
        ++q.next;
      } else {
        q.blocked = true;
      }
      continue;
    }
    for (const Allocation& a : *placement) {
      work.Allocate(a.node, SliceSpec(job, core::GpuCount(a.gpus)), a.gpus);
    }
    Add(q, job, +1);
    ++q.next;
    decisions.push_back(Decision{Decision::Kind::kStart, job.id, std::move(*placement)});
  }
  return decisions;
}

}  // namespace gpufleet::sched

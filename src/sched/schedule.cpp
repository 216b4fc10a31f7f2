#include "sched/schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include "core/check.h"
#include "sched/elastic.h"
#include "sched/gang_placement.h"
#include "sched/placer.h"
#include "sched/queued_job.h"

namespace gpufleet::sched {

void Scheduler::Enqueue(const QueuedJob& job) {
  Entry e{queue_policy_.Key(job), job.submit_s, job.id};
  // Classes order only preemptive policies' queues (their keys go by class first).
  e.priority_class = queue_policy_.Preemptive() ? queue_policy_.PriorityClass(job) : 0;
  e.least_gpus = job.gpu_milli < core::kGpuMilli ? 0 : FewestGpus(job);
  GPUFLEET_CHECK(entry_of_.emplace(job.id, e).second);
  const QueuedJob& stored = order_.emplace(e, job).first->second;
  if (queue_policy_.FairShare()) {
    queue_entries_[job.queue].insert(e);
  } else {
    by_class_and_size_[e.priority_class][e.least_gpus].emplace(e, &stored);
  }
  const double promote = queue_policy_.PromotionTime(job);
  if (std::isfinite(promote)) promotions_.emplace(promote, job.id);
}

void Scheduler::Rekey() {
  std::vector<QueuedJob> jobs;
  jobs.reserve(order_.size());
  for (auto& [entry, job] : order_) jobs.push_back(std::move(job));
  order_.clear();
  entry_of_.clear();
  promotions_.clear();
  queue_entries_.clear();
  by_class_and_size_.clear();
  for (const QueuedJob& job : jobs) Enqueue(job);
}

bool Scheduler::Remove(JobId id) {
  auto it = entry_of_.find(id);
  if (it == entry_of_.end()) return false;
  const QueuedJob& job = order_.at(it->second);
  const double promote = queue_policy_.PromotionTime(job);
  if (std::isfinite(promote)) {
    for (auto [p, end] = promotions_.equal_range(promote); p != end; ++p) {
      if (p->second == id) {
        promotions_.erase(p);
        break;
      }
    }
  }
  const Entry& e = it->second;
  if (queue_policy_.FairShare()) {
    auto q = queue_entries_.find(job.queue);
    q->second.erase(e);
    if (q->second.empty()) queue_entries_.erase(q);
  } else {
    auto by_class = by_class_and_size_.find(e.priority_class);
    auto bucket = by_class->second.find(e.least_gpus);
    bucket->second.erase(e);
    if (bucket->second.empty()) by_class->second.erase(bucket);
    if (by_class->second.empty()) by_class_and_size_.erase(by_class);
  }
  order_.erase(e);
  entry_of_.erase(it);
  return true;
}

std::vector<QueuedJob> Scheduler::Waiting() const {
  std::vector<QueuedJob> out;
  out.reserve(order_.size());
  for (const auto& [entry, job] : order_) out.push_back(job);
  return out;
}

void Scheduler::PromoteStarved(int64_t now) {
  while (!promotions_.empty() && promotions_.begin()->first <= static_cast<double>(now)) {
    const JobId id = promotions_.begin()->second;
    promotions_.erase(promotions_.begin());
    auto it = entry_of_.find(id);
    GPUFLEET_CHECK(it != entry_of_.end());
    QueuedJob job = order_.at(it->second);
    Remove(id);
    job.attained_gpu_s = 0;
    job.waiting_since_s = now;
    job.promoted = true;
    Enqueue(job);
  }
}

void Scheduler::SetQueueWeights(std::map<std::string, double> weights, double default_weight) {
  for (const auto& [queue, weight] : weights) GPUFLEET_CHECK(weight > 0);
  GPUFLEET_CHECK(default_weight > 0);
  queue_weights_ = std::move(weights);
  default_queue_weight_ = default_weight;
}

double Scheduler::NextPromotion() const {
  return promotions_.empty() ? std::numeric_limits<double>::infinity() : promotions_.begin()->first;
}

namespace {

// Jobs tried for EASY backfill per pass (Slurm's bf_max_job_test defaults to 500).
constexpr int kMaxBackfillTested = 500;
// Shrink plans tried per pass (each copies the cluster), for the same reason.
constexpr int kMaxShrinkPlans = 16;

}  // namespace

std::vector<Decision> Scheduler::Schedule(const core::ClusterSnapshot& cluster,
                                          std::span<const RunningJob> running, int64_t now,
                                          core::Rng& rng, const RunningIndex* index) const {
  GPUFLEET_CHECK(index == nullptr || (index->size() == running.size() && index->now() == now));
  std::vector<Decision> decisions;
  const bool elastic_running =
      index != nullptr ? index->elastic_jobs() > 0
                       : std::any_of(running.begin(), running.end(),
                                     [](const RunningJob& r) { return IsElastic(r.job); });
  if (order_.empty() && !elastic_running) return decisions;
  if (queue_policy_.FairShare()) {
    if (order_.empty()) return decisions;
    return ScheduleFairShare(cluster, running, rng);
  }
  core::ClusterSnapshot work = cluster;  // decisions are applied here as they are made
  Placer placer(work, placement_policy_, std::span<const uint32_t>());
  const bool preemptive = queue_policy_.Preemptive();
  const double min_run_s = queue_policy_.MinRunBeforePreemptionS();
  // Running jobs' GPUs and (preemptive policies) priority classes with the service attained by
  // `now`, and the GPUs of the jobs that may be preempted (they ran long enough), per class.
  // With a caller's index they are read from it (the same figures, kept across passes), and the
  // pass reads a running job only when it looks for victims.
  std::vector<int> own_gpus;
  std::vector<int> own_class;
  int max_running_class = -1;
  std::map<int, int64_t> own_preemptible_gpus;
  if (preemptive && index != nullptr) {
    max_running_class = index->max_class();
  } else if (preemptive) {
    own_gpus.resize(running.size());
    own_class.resize(running.size());
    for (size_t i = 0; i < running.size(); ++i) {
      own_gpus[i] = GpusOf(running[i].placement);
      const double ran_s = static_cast<double>(now - running[i].started_s);
      own_class[i] = queue_policy_.PriorityClassAt(
          running[i].job, running[i].job.attained_gpu_s + static_cast<double>(own_gpus[i]) * ran_s);
      max_running_class = std::max(max_running_class, own_class[i]);
      if (ran_s >= min_run_s) own_preemptible_gpus[own_class[i]] += own_gpus[i];
    }
  }
  const std::map<int, int64_t>& preemptible_gpus_of_class =
      index != nullptr ? index->preemptible_gpus_of_class() : own_preemptible_gpus;
  auto running_gpus = [&](size_t i) { return index != nullptr ? index->gpus_of(i) : own_gpus[i]; };
  auto running_class = [&](size_t i) {
    return index != nullptr ? index->class_of(i) : own_class[i];
  };
  // The preemption index: every running job that may be preempted (it has run long enough), in
  // the order victims are taken: lowest priority class first; within a class `VictimRank`'s
  // order (the job expected to end last first; policies without estimates see NaN everywhere and
  // fall through to the most recently started). A waiting job of class c may take the jobs of
  // classes above c: a contiguous run of this order. Victims are always taken from its front, so
  // the jobs preempted in this pass are exactly victim_order[0, victims_taken): no running job is
  // scanned twice. Without a caller's `RunningIndex`, built as waiting jobs need it, for the
  // classes they may take: most passes preempt nobody, and a job of class c needs only the jobs
  // above c. Jobs of lower classes sort after every job already indexed, so extending the index
  // to them appends and keeps the taken prefix. With one, read from it as far as plans read.
  std::vector<size_t> victim_order;
  std::vector<int64_t> victim_gpus_before{0};  // GPUs held by victim_order[0, k), at index k
  size_t victims_taken = 0;
  int indexed_above = std::numeric_limits<int>::max();  // jobs of classes above this are in
  // One candidate's sort key, computed once rather than in every comparison.
  struct VictimKey {
    int cls;
    VictimRank rank;
    size_t index;
  };
  // Candidates indexed but not yet in victim_order, kept as a heap with the next victim on top:
  // victim_order grows only as far as plans read it (a pass seldom needs more than a few victims,
  // and sorting every candidate cost O(R log R) per pass).
  std::vector<VictimKey> victim_heap;
  auto comes_after = [](const VictimKey& a, const VictimKey& b) {
    if (a.cls != b.cls) return a.cls < b.cls;
    return b.rank < a.rank;
  };
  auto extend_victim_index = [&](int job_class) {
    for (size_t i = 0; i < running.size(); ++i) {
      if (running_class(i) > job_class && running_class(i) <= indexed_above &&
          static_cast<double>(now - running[i].started_s) >= min_run_s) {
        victim_heap.push_back(VictimKey{running_class(i), RankAsVictim(running[i]), i});
      }
    }
    indexed_above = job_class;
    std::make_heap(victim_heap.begin(), victim_heap.end(), comes_after);
  };
  // With a caller's index, the same order is already kept there, class by class: a cursor walks
  // it from the lowest priority class, as far as plans read.
  using VictimClasses = RunningIndex::VictimsByClass;
  VictimClasses::const_reverse_iterator cursor_class;
  std::set<RunningIndex::Victim>::const_iterator cursor;
  if (index != nullptr) {
    cursor_class = index->victims_by_class().crbegin();
    if (cursor_class != index->victims_by_class().crend()) cursor = cursor_class->second.begin();
  }
  // The next victim a job of class `job_class` may take, taken off the index.
  auto next_victim = [&](int job_class) -> std::optional<size_t> {
    if (index != nullptr) {
      const auto end = index->victims_by_class().crend();
      while (cursor_class != end && cursor == cursor_class->second.end()) {
        if (++cursor_class != end) cursor = cursor_class->second.begin();
      }
      if (cursor_class == end || cursor_class->first <= job_class) return std::nullopt;
      return (cursor++)->slot;
    }
    if (victim_heap.empty() || victim_heap.front().cls <= job_class) return std::nullopt;
    std::pop_heap(victim_heap.begin(), victim_heap.end(), comes_after);
    const size_t i = victim_heap.back().index;
    victim_heap.pop_back();
    return i;
  };
  // victim_order[k], ordered as far as k, if a job of class `job_class` may take it (its class is
  // above `job_class`); nullopt past the last such job.
  auto victim_at = [&](size_t k, int job_class) -> std::optional<size_t> {
    while (victim_order.size() <= k) {
      const std::optional<size_t> next = next_victim(job_class);
      if (!next) break;
      const size_t i = *next;
      victim_gpus_before.push_back(victim_gpus_before.back() + running_gpus(i));
      victim_order.push_back(i);
    }
    if (k < victim_order.size() && running_class(victim_order[k]) > job_class) {
      return victim_order[k];
    }
    return std::nullopt;
  };
  // Elastic jobs: every running job's placement as this pass leaves it (only when one of them is
  // elastic: shrinks and grows change placements, and a job is resized at most once a pass).
  std::vector<ElasticView> views;
  if (elastic_running) {
    views.resize(running.size());
    for (size_t i = 0; i < running.size(); ++i) views[i].placement = running[i].placement;
  }
  int64_t shrinkable = elastic_running ? ShrinkableGpus(running, views) : 0;
  // Elastic jobs started in this pass: (index in `decisions`, the job).
  std::vector<std::pair<size_t, const QueuedJob*>> started_elastic;
  int shrink_plans = 0;
  int64_t free_gpus = work.free_whole_gpus();
  int64_t free_milli = work.total_gpu_milli() - work.used_gpu_milli();
  // The whole GPUs a job of class `job_class` could get now at the most: those free, and those of
  // the running jobs it may preempt that no earlier job of this pass took (victims are taken in
  // index order, the lowest priority, i.e. the highest class number, first: once any job of a
  // class at or below `job_class` was taken, every job it may preempt was). A whole job needing
  // more cannot start in this pass (elastic shrinks aside), and nothing done for it would change
  // anything.
  auto reachable_gpus = [&](int job_class) {
    int64_t preemptible = 0;
    for (auto it = preemptible_gpus_of_class.upper_bound(job_class);
         it != preemptible_gpus_of_class.end(); ++it) {
      preemptible += it->second;
    }
    return free_gpus + std::max<int64_t>(0, preemptible - victim_gpus_before[victims_taken]);
  };
  const Backfill backfill = queue_policy_.backfill();
  bool blocked = false;
  int backfill_tested = 0;
  double shadow_s = std::numeric_limits<double>::infinity();  // EASY reservation time
  int64_t extra_gpus = 0;  // GPUs the reservation leaves over at shadow_s
  // Expected end of every running job and every job started in this pass, for EASY.
  std::vector<std::pair<double, int>> ends;
  if (backfill == Backfill::kEasy) {
    for (const RunningJob& r : running) {
      const double est = r.job.estimate_s;
      // A job past its estimate is expected to end any moment now.
      ends.emplace_back(std::isnan(est) ? std::numeric_limits<double>::infinity()
                                        : std::max(static_cast<double>(r.started_s) + est,
                                                   static_cast<double>(now) + 1),
                        GpusOf(r.placement));
    }
  }
  // One waiting job's turn, in policy order: start it (shrinking elastic jobs or preempting as
  // the policy allows) or leave it waiting. False: no later job may start in this pass.
  // NeverFits by job shape (what it reads of a job), once per pass: it scans every node, and a
  // busy preemptive pass asks it for thousands of waiting jobs of a few shapes.
  std::map<std::tuple<int, int, int, int, uint64_t, int64_t, int64_t, bool>, bool> never_by_shape;
  auto consider = [&](const Entry& entry, const QueuedJob& job) -> bool {
    // Nothing more can start, unless a waiting job may still preempt a running one (waiting jobs
    // come in class order, so once one cannot, none after it can).
    const int job_class = preemptive ? entry.priority_class : 0;
    const bool may_preempt = preemptive && job_class < max_running_class;
    if (free_milli <= 0 && !may_preempt && shrinkable <= 0) return false;
    const bool whole = job.gpu_milli >= core::kGpuMilli;
    // Under EASY, a later job may start only if it ends before the reservation or fits in the
    // GPUs the reservation leaves over; checked before any placement work.
    bool uses_extra = false;
    if (blocked && backfill == Backfill::kEasy) {
      // Like Slurm's bf_max_job_test: past the reservation, only so many jobs are tried per pass,
      // so a long queue does not make every pass scan all of it.
      if (++backfill_tested > kMaxBackfillTested) return false;
      // No reservation time (it waits on jobs of unknown length): nothing may claim to end
      // before it, or a stream of short jobs could hold the blocked job back forever.
      const bool ends_in_time = !std::isnan(job.estimate_s) && std::isfinite(shadow_s) &&
                                static_cast<double>(now) + job.estimate_s <= shadow_s;
      if (!ends_in_time) {
        if (FewestGpus(job) > extra_gpus) return true;
        uses_extra = true;
      }
    }
    std::optional<std::vector<Allocation>> placement;
    const bool elastic = IsElastic(job);
    const int least_gpus = FewestGpus(job);
    // Cheap test first: a job asking more whole GPUs than are free cannot start.
    if (!whole || least_gpus <= free_gpus) {
      // An elastic job starts at its fewest here; what is left after every waiting job had its
      // turn makes it larger (the grow step below).
      placement =
          PlaceGang(work, placer, elastic ? SizedTo(job, least_gpus) : job, allow_spread_, rng);
    }
    // Whether no nodes of this cluster could ever hold the job, asked once and only where it
    // is about to try a shrink or a preemption: no plan can place such a job, and before, each
    // one used up a shrink plan of the pass's budget on every pass (kMaxShrinkPlans of them
    // starved every job behind that a shrink would have started).
    std::optional<bool> never;
    const auto never_fits = [&] {
      if (!never) {
        const auto shape = std::make_tuple(job.total_gpus, job.min_gpus, job.nodes, job.gpu_milli,
                                           job.gpu_models.bits(), job.cpu_milli_per_gpu,
                                           job.memory_mib_per_gpu, job.restartable);
        auto it = never_by_shape.find(shape);
        if (it == never_by_shape.end()) {
          it = never_by_shape
                   .emplace(shape,
                            NeverFits(job, cluster, GrowthNodesFor(job), allow_spread_).has_value())
                   .first;
        }
        never = it->second;
      }
      return *never;
    };
    // Shrink before preempting: GPUs running elastic jobs hold above their min are taken back
    // first (by any waiting job: they were lent from idle GPUs), and only if that is enough.
    if (!placement && shrinkable > 0 && shrink_plans < kMaxShrinkPlans &&
        (!whole || free_gpus + shrinkable >= least_gpus) && !never_fits()) {
      ++shrink_plans;
      if (auto plan =
              PlanShrink(work, placement_policy_, job, running, views, allow_spread_, rng)) {
        for (auto& [i, place] : plan->resized) {
          for (const Allocation& a : views[i].placement) {
            work.Release(a.node, SliceSpec(running[i].job, core::GpuCount(a.gpus)), a.gpus);
          }
          for (const Allocation& a : place) {
            work.Allocate(a.node, SliceSpec(running[i].job, core::GpuCount(a.gpus)), a.gpus);
          }
          views[i].placement = place;
          views[i].touched = true;
          decisions.push_back(Decision{Decision::Kind::kResize, running[i].job.id, place});
        }
        placement = std::move(plan->placement);
        shrinkable = ShrinkableGpus(running, views);
      }
    }
    // (A whole job that even every candidate's GPUs could not make room for skips the index.)
    if (!placement && may_preempt &&
        (!whole || reference_pass_ || reachable_gpus(job_class) >= least_gpus) && !never_fits()) {
      // Preempt running jobs of strictly lower priority, in victim order, until the job fits;
      // preempt nobody if even all of them are not enough.
      if (index == nullptr && job_class < indexed_above) extend_victim_index(job_class);
      const size_t first = victims_taken;
      // Skipped where the plan must fail without placing anything: no candidates left (and, for
      // whole GPUs, not enough of them: `reachable_gpus` above).
      std::optional<PreemptionPlan> plan;
      if (victim_at(first, job_class)) {
        // A job resized in this pass is not preempted in it too. An elastic job preempts only
        // for its fewest GPUs (it may grow later into what is idle).
        plan = PlanPreemption(
            work, placer, elastic ? SizedTo(job, least_gpus) : job, running,
            [&](size_t k) { return victim_at(first + k, job_class); },
            [&](size_t i) { return views.empty() || !views[i].touched; }, allow_spread_, rng);
      }
      if (plan) {
        // The victims' resources were released on `work` itself.
        for (size_t i : plan->victims) {
          // Victims come in index order; the only ones skipped were resized in this pass.
          while (victims_taken < victim_order.size() && victim_order[victims_taken] != i) {
            GPUFLEET_CHECK(!views.empty() && views[victim_order[victims_taken]].touched);
            ++victims_taken;
          }
          GPUFLEET_CHECK(victims_taken < victim_order.size());
          ++victims_taken;
          if (!views.empty()) views[i].touched = true;
          decisions.push_back(
              Decision{Decision::Kind::kPreempt, running[i].job.id, running[i].placement});
        }
        placement = std::move(plan->placement);
      }
    }
    if (placement) {
      const int placed_gpus = GpusOf(*placement);
      if (uses_extra) extra_gpus -= placed_gpus;
      for (const Allocation& a : *placement) {
        core::JobSpec slice = SliceSpec(job, core::GpuCount(a.gpus));
        work.Allocate(a.node, slice, a.gpus);
      }
      free_gpus = work.free_whole_gpus();
      free_milli = work.total_gpu_milli() - work.used_gpu_milli();
      if (backfill == Backfill::kEasy) {
        ends.emplace_back(std::isnan(job.estimate_s) ? std::numeric_limits<double>::infinity()
                                                     : static_cast<double>(now) + job.estimate_s,
                          placed_gpus);
      }
      if (elastic) started_elastic.emplace_back(decisions.size(), &job);
      decisions.push_back(Decision{Decision::Kind::kStart, job.id, std::move(*placement)});
      return true;
    }
    if (blocked) return true;
    // A job that no nodes of this cluster could ever hold (a gang larger than the cluster, or of
    // a GPU model it lacks, accepted before its nodes joined) holds nothing back: it takes no
    // reservation and does not stop the strict order, or it would idle the cluster for good.
    if (backfill != Backfill::kGreedy && never_fits()) return true;
    blocked = true;
    if (backfill == Backfill::kNone) return false;
    if (backfill == Backfill::kEasy) {
      // The reservation: when enough GPUs will be free for this job, by the estimates.
      std::sort(ends.begin(), ends.end());
      int64_t avail = free_gpus;
      shadow_s = static_cast<double>(now);
      if (avail < job.total_gpus) {
        shadow_s = std::numeric_limits<double>::infinity();
        for (const auto& [end, gpus] : ends) {
          // Jobs of unknown length free nothing at a known time: the GPUs left over at an
          // unknown reservation time are only those known to be free by then.
          if (std::isinf(end)) break;
          avail += gpus;
          if (avail >= job.total_gpus) {
            shadow_s = end;
            break;
          }
        }
      }
      extra_gpus = std::max<int64_t>(0, avail - job.total_gpus);
    }
    return true;
  };
  // The waiting jobs' turns. Under greedy backfill with no elastic job running, a whole job that
  // needs more GPUs than it could reach (`reachable_gpus`) is left waiting with nothing tried, so
  // the turns go only to the jobs of each class whose size is within reach: the queue's buckets
  // of larger jobs are passed over, not walked (the same decisions; a long queue of jobs too
  // large for what is free costs nothing). Waiting jobs come in class order (`QueuePolicy::Key`).
  if (backfill == Backfill::kGreedy && !elastic_running && !reference_pass_) {
    bool go_on = true;
    for (const auto& [job_class, by_size] : by_class_and_size_) {
      struct Cursor {
        int least_gpus;
        const Bucket* bucket;
        Bucket::const_iterator next;
      };
      std::vector<Cursor> cursors;  // by size, smallest first
      for (const auto& [least_gpus, bucket] : by_size) {
        cursors.push_back(Cursor{least_gpus, &bucket, bucket.begin()});
      }
      const Entry* last = nullptr;  // the last job of this class that had its turn
      while (go_on) {
        const int64_t reach = preemptive ? reachable_gpus(job_class) : free_gpus;
        Cursor* first = nullptr;
        for (Cursor& c : cursors) {
          if (c.least_gpus > reach) break;
          // A bucket passed over earlier resumes after the last turn, never before it.
          if (last != nullptr && c.next != c.bucket->end() && c.next->first < *last) {
            c.next = c.bucket->upper_bound(*last);
          }
          if (c.next != c.bucket->end() &&
              (first == nullptr || c.next->first < first->next->first)) {
            first = &c;
          }
        }
        if (first == nullptr) break;
        const auto& [entry, job] = *first->next;  // the buckets do not change in a pass
        ++first->next;
        last = &entry;
        go_on = consider(entry, *job);
      }
      if (!go_on) break;
    }
  } else {
    int last_class = std::numeric_limits<int>::min();
    for (const auto& [entry, job] : order_) {
      // What the buckets rely on: the policy's order goes by class first.
      GPUFLEET_CHECK(!reference_pass_ || entry.priority_class >= last_class);
      last_class = entry.priority_class;
      if (!consider(entry, job)) break;
    }
  }
  // Grow: GPUs no waiting job can use now go to elastic jobs below their most, the one the queue
  // policy ranks first first: jobs started in this pass (their start takes more, at no cost), and
  // running jobs that ran at least `elastic_grow_after_s_` since their last start or resize (a
  // resize: a checkpoint-restart). Not while a blocked job holds a reservation (no backfill,
  // EASY): the GPUs are kept for it. A later waiting job takes them back by a shrink.
  if ((!views.empty() || !started_elastic.empty()) && free_gpus > 0 &&
      (!blocked || backfill == Backfill::kGreedy)) {
    struct Grower {
      double key;
      JobId id;
      const QueuedJob* job;
      size_t index;  // into `decisions` (started in this pass) or `running`
      bool started;
    };
    std::vector<Grower> growers;
    std::vector<Decision> grown;
    constexpr JobId kMovedDecision = std::numeric_limits<JobId>::min();
    for (const auto& [d, job] : started_elastic) {
      growers.push_back(Grower{queue_policy_.Key(*job), job->id, job, d, true});
    }
    for (size_t i = 0; i < views.size(); ++i) {
      const QueuedJob& job = running[i].job;
      if (views[i].touched || !IsElastic(job) || GpusOf(views[i].placement) >= job.total_gpus ||
          static_cast<double>(now - running[i].started_s) < elastic_grow_after_s_) {
        continue;
      }
      QueuedJob now_job = job;
      now_job.attained_gpu_s += static_cast<double>(GpusOf(views[i].placement)) *
                                static_cast<double>(now - running[i].started_s);
      growers.push_back(Grower{queue_policy_.Key(now_job), job.id, &job, i, false});
    }
    std::sort(growers.begin(), growers.end(), [](const Grower& a, const Grower& b) {
      return a.key != b.key ? a.key < b.key : a.id < b.id;
    });
    for (const Grower& g : growers) {
      if (free_gpus <= 0) break;
      const QueuedJob& job = *g.job;
      const std::vector<Allocation> old =
          g.started ? decisions[g.index].placement : views[g.index].placement;
      const int current = GpusOf(old);
      for (const Allocation& a : old) {
        work.Release(a.node, SliceSpec(job, core::GpuCount(a.gpus)), a.gpus);
      }
      std::optional<std::vector<Allocation>> bigger;
      const int most = static_cast<int>(std::min<int64_t>(job.total_gpus, current + free_gpus));
      for (int gpus = most; gpus > current && !bigger; --gpus) {
        bigger = PlaceGang(work, placer, SizedTo(job, gpus), allow_spread_, rng);
      }
      for (const Allocation& a : bigger ? *bigger : old) {
        work.Allocate(a.node, SliceSpec(job, core::GpuCount(a.gpus)), a.gpus);
      }
      if (bigger && g.started) {
        // Its larger start may use GPUs that decisions after it free: it moves to the end.
        Decision start = std::move(decisions[g.index]);
        decisions[g.index].job = kMovedDecision;
        start.placement = std::move(*bigger);
        grown.push_back(std::move(start));
      } else if (bigger) {
        views[g.index].touched = true;
        grown.push_back(Decision{Decision::Kind::kResize, job.id, *bigger});
        views[g.index].placement = std::move(*bigger);
      }
      free_gpus = work.free_whole_gpus();
    }
    // The grows come last, in the order made: each fits once everything before it is done.
    std::erase_if(decisions, [](const Decision& d) { return d.job == kMovedDecision; });
    for (Decision& d : grown) decisions.push_back(std::move(d));
  }
  return decisions;
}

}  // namespace gpufleet::sched

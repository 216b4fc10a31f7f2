#include "sim/time_sim.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include "core/check.h"
#include "core/cluster.h"
#include "core/rng.h"
#include "sched/gang_placement.h"
#include "sched/queued_job.h"
#include "sched/runtime_predictor.h"
#include "sched/schedule.h"
#include "sim/sim_fleet.h"

namespace gpufleet::sim {

core::Result<ClusterSpec> NamedCluster(std::string_view name, const core::GpuCatalog& catalog) {
  if (name == "philly-512") {
    auto model = catalog.Find("V100M32");
    GPUFLEET_CHECK(model.has_value());
    ClusterSpec spec;
    spec.name = "philly-512";
    for (int i = 0; i < 64; ++i) {
      core::NodeSpec node;
      node.name = "philly-" + std::to_string(i);
      node.cpu_milli = 64000;
      node.memory_mib = 512 * 1024;
      node.num_gpus = 8;
      node.model = *model;
      spec.nodes.push_back(std::move(node));
    }
    return spec;
  }
  return core::Error{"unknown cluster '" + std::string(name) + "'; known: philly-512"};
}

void ReplicateTrace(int factor, std::vector<TraceJob>* jobs, ClusterSpec* cluster) {
  GPUFLEET_CHECK(factor >= 1);
  if (factor == 1) return;
  std::vector<TraceJob> out;
  out.reserve(jobs->size() * static_cast<size_t>(factor));
  for (const TraceJob& j : *jobs) {
    for (int r = 0; r < factor; ++r) {
      TraceJob copy = j;
      copy.id = j.id * factor + r;
      out.push_back(std::move(copy));
    }
  }
  *jobs = std::move(out);
  const size_t nodes = cluster->nodes.size();
  for (int r = 1; r < factor; ++r) {
    for (size_t i = 0; i < nodes; ++i) {
      core::NodeSpec copy = cluster->nodes[i];
      copy.name += "-r" + std::to_string(r);
      cluster->nodes.push_back(std::move(copy));
    }
  }
  cluster->name += " x" + std::to_string(factor);
}

std::map<std::string, double> GpuTimeShares(const std::vector<TraceJob>& jobs) {
  std::map<std::string, double> shares;
  double total = 0;
  for (const TraceJob& j : jobs) {
    const double gpu_time = static_cast<double>(j.num_gpus) * static_cast<double>(j.duration_s);
    shares[j.vc] += gpu_time;
    total += gpu_time;
  }
  if (total > 0) {
    for (auto& [vc, share] : shares) share /= total;
  }
  return shares;
}

int64_t MakeElastic(std::vector<TraceJob>* jobs, double fraction, double min_factor,
                    double max_factor, int most_gpus, uint64_t seed) {
  int64_t made = 0;
  for (TraceJob& j : *jobs) {
    j.min_gpus = j.max_gpus = 0;
    if (j.gpu_milli < core::kGpuMilli || !(fraction > 0)) continue;
    // splitmix64 of the id and the seed: a uniform draw in [0, 1) that only they decide.
    uint64_t x = static_cast<uint64_t>(j.id) + seed * 0x9E3779B97F4A7C15ULL + 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    x ^= x >> 31;
    if (static_cast<double>(x >> 11) * 0x1.0p-53 >= fraction) continue;
    const int least = std::max(1, static_cast<int>(std::floor(j.num_gpus * min_factor)));
    const int most = std::max(
        j.num_gpus, std::min(most_gpus, static_cast<int>(std::ceil(j.num_gpus * max_factor))));
    if (most <= least || least > j.num_gpus) continue;
    j.min_gpus = least;
    j.max_gpus = most;
    ++made;
  }
  return made;
}

namespace {

struct Active {
  int gpus = 1;          // whole GPUs it runs on (a share of one GPU: 1)
  double rate = 1;       // reference seconds of work done per second
  double remaining = 0;  // reference seconds of work left at the start of this run
  int64_t finish_s = 0;
  int64_t epoch = 0;  // which run of the job this is (changes when it restarts)
};

}  // namespace

core::Result<TimeSimResult> RunTimeSim(const std::vector<TraceJob>& jobs,
                                       const ClusterSpec& given_cluster,
                                       const sched::QueuePolicy& given_queue_policy,
                                       const sched::PlacementPolicy& placement_policy,
                                       const TimeSimConfig& config, bool log_decisions) {
  // Every replay learns from its own finished jobs only: a learning policy starts afresh (a
  // policy outside the registry, as tests make, is used as given and learns nothing).
  std::unique_ptr<sched::QueuePolicy> fresh_policy =
      sched::MakeQueuePolicy(given_queue_policy.Name());
  const sched::QueuePolicy& queue_policy = fresh_policy ? *fresh_policy : given_queue_policy;
  const core::GpuCatalog& catalog = core::GpuCatalog::Builtin();
  // An autoscaled replay runs on a snapshot of every group's `max` nodes, most of them blocked.
  const scale::AutoscaleConfig* autoscale = config.autoscale.config;
  if (autoscale != nullptr && autoscale->groups.empty()) {
    return core::Error{"autoscale: no node groups"};
  }
  const ClusterSpec fleet_spec =
      autoscale != nullptr ? FleetClusterSpec(*autoscale) : ClusterSpec{};
  const ClusterSpec& spec = autoscale != nullptr ? fleet_spec : given_cluster;
  core::ClusterSnapshot cluster(spec.nodes);
  std::unique_ptr<SimFleet> fleet;
  if (autoscale != nullptr) {
    fleet = std::make_unique<SimFleet>(*autoscale, config.autoscale, config.seed);
    fleet->Start(cluster, jobs.empty() ? 0 : jobs.front().submit_s);
  }
  TimeSimResult result;
  result.policy = std::string(queue_policy.Name());
  result.total_gpus = cluster.total_gpus();
  int max_node_gpus = 0;
  for (const auto& n : spec.nodes) max_node_gpus = std::max(max_node_gpus, n.num_gpus);
  // Job shapes already found to fit somewhere (the check scans every node; traces repeat a few
  // shapes many times over).
  std::set<std::tuple<int, int, uint64_t, int64_t, int64_t>> shapes_that_fit;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const auto shape =
        std::make_tuple(jobs[i].num_gpus, jobs[i].gpu_milli, jobs[i].gpu_models.bits(),
                        jobs[i].cpu_milli_per_gpu, jobs[i].memory_mib_per_gpu);
    // The same check the live controller makes at submit: a job that can never start would
    // wait forever (and hold every queue behind its reservation).
    if (shapes_that_fit.count(shape) == 0) {
      sched::JobAsk ask;
      ask.total_gpus = jobs[i].num_gpus;
      ask.gpu_milli = jobs[i].gpu_milli;
      ask.gpu_models = jobs[i].gpu_models;
      ask.cpu_milli_per_gpu = jobs[i].cpu_milli_per_gpu;
      ask.memory_mib_per_gpu = jobs[i].memory_mib_per_gpu;
      const sched::QueuedJob queued = sched::BuildQueuedJob(ask, sched::Estimates::kNone, {});
      if (auto why = sched::NeverFits(
              queued, spec.nodes,
              config.allow_spread ||
                  sched::LargerThanEveryNode(queued, jobs[i].num_gpus, max_node_gpus))) {
        return core::Error{"job " + std::to_string(jobs[i].id) + " on cluster " + spec.name + ": " +
                           why->message};
      }
      shapes_that_fit.insert(shape);
    }
    if (i > 0 && jobs[i].submit_s < jobs[i - 1].submit_s) {
      return core::Error{"jobs must be sorted by submit time (job " + std::to_string(jobs[i].id) +
                         ")"};
    }
  }
  result.jobs.resize(jobs.size());
  std::unordered_map<sched::JobId, size_t> index_of;
  for (size_t i = 0; i < jobs.size(); ++i) {
    JobOutcome& o = result.jobs[i];
    o.id = jobs[i].id;
    o.submit_s = jobs[i].submit_s;
    o.num_gpus = jobs[i].num_gpus;
    o.duration_s = jobs[i].duration_s;
    o.vc = jobs[i].vc;
    index_of.emplace(jobs[i].id, i);
  }

  sched::Scheduler scheduler(queue_policy, placement_policy, config.allow_spread);
  scheduler.SetElasticGrowAfter(config.elastic_grow_after_s);
  if (queue_policy.FairShare()) {
    std::map<std::string, double> weights =
        config.queue_weights.empty() ? GpuTimeShares(jobs) : config.queue_weights;
    // A VC absent from the weights (or with no GPU-time) still gets a small, positive share.
    double smallest = 1.0;
    for (auto it = weights.begin(); it != weights.end();) {
      if (!(it->second > 0)) {
        it = weights.erase(it);
      } else {
        smallest = std::min(smallest, it->second);
        ++it;
      }
    }
    scheduler.SetQueueWeights(std::move(weights), smallest);
  }
  core::Rng rng(config.seed);
  sched::RuntimePredictor predictor;
  std::unordered_map<sched::JobId, double> estimate_of;  // prediction made at arrival
  std::unordered_map<sched::JobId, double> work_left;    // reference seconds still to run
  std::unordered_map<sched::JobId, double> attained;     // GPU-seconds of service so far
  std::vector<sched::RunningJob> running;
  std::unordered_map<sched::JobId, size_t> running_slot;
  // The running jobs' classes and GPUs, kept as they start, stop and change class, so that a pass
  // does not recompute them all (`running` and it change together).
  sched::RunningIndex running_index(queue_policy);
  std::unordered_map<sched::JobId, Active> active;
  // Completions and priority-class changes of running jobs; an event whose epoch is not the
  // job's current run is stale (the job was preempted since) and is ignored.
  struct Event {
    int64_t time;
    int kind;  // 0: completion, 1: class change (only wakes the scheduler)
    sched::JobId id;
    int64_t epoch;
    bool operator>(const Event& o) const {
      return std::tie(time, kind, id, epoch) > std::tie(o.time, o.kind, o.id, o.epoch);
    }
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  // Wakes the scheduler when a running job of `gpus` GPUs that has attained `attained_now` by
  // `now` changes priority class next (preemptive policies), unless it finishes first.
  auto arm_class_wake = [&](const sched::QueuedJob& job, int gpus, double attained_now, int64_t now,
                            int64_t finish_s, int64_t epoch) {
    const sched::JobId id = job.id;
    const double change = queue_policy.NextClassChange(job, attained_now);
    if (!std::isfinite(change)) return;
    const int64_t at =
        now + std::max<int64_t>(1, static_cast<int64_t>(std::ceil((change - attained_now) / gpus)));
    if (at < finish_s) events.push(Event{at, 1, id, epoch});
  };
  int64_t epoch_counter = 0;
  std::set<int64_t> wakes;  // times already scheduled to wake the scheduler for promotions
  auto log = [&](int64_t t, const char* what, sched::JobId id, const std::string& extra) {
    if (!log_decisions) return;
    result.decision_log +=
        std::to_string(t) + "," + what + "," + std::to_string(id) + "," + extra + "\n";
  };
  // The scheduler's view of trace job `t` at `now` (waiting or about to run).
  auto queued_of = [&](const TraceJob& t, int64_t now) {
    sched::JobAsk ask;
    ask.id = t.id;
    ask.total_gpus = t.num_gpus;
    ask.gpu_milli = t.gpu_milli;
    ask.cpu_milli_per_gpu = t.cpu_milli_per_gpu;
    ask.memory_mib_per_gpu = t.memory_mib_per_gpu;
    ask.gpu_models = t.gpu_models;
    // Without spreading, a job larger than a node that whole nodes can hold runs as a gang of
    // whole nodes (a multi-node training job's workers) and waits for them, never on fragments.
    if (IsElastic(t)) {
      ask.total_gpus = t.max_gpus;
      ask.min_gpus = t.min_gpus;
    } else if (!config.allow_spread && t.num_gpus > max_node_gpus &&
               t.num_gpus % max_node_gpus == 0) {
      ask.nodes = t.num_gpus / max_node_gpus;
    }
    ask.submit_s = t.submit_s;
    ask.queue = t.vc;
    sched::JobRunTime run_time;
    run_time.predicted_s = estimate_of.at(t.id);
    run_time.true_s = static_cast<double>(t.duration_s);
    run_time.attained_gpu_s = attained[t.id];
    run_time.waiting_since_s = now;
    return sched::BuildQueuedJob(ask, queue_policy.estimates(), run_time);
  };
  // The waiting jobs, for the autoscaler's planner (autoscaled replays only).
  std::unordered_map<sched::JobId, sched::QueuedJob> waiting_jobs;
  auto enqueue = [&](const TraceJob& t, int64_t now) {
    sched::QueuedJob q = queued_of(t, now);
    if (fleet) waiting_jobs[t.id] = q;
    scheduler.Enqueue(std::move(q));
  };
  // Takes `id` off the cluster at `now`; returns the GPU-seconds it ran since its start.
  auto stop = [&](sched::JobId id, int64_t now) {
    const size_t slot = running_slot.at(id);
    sched::RunningJob& r = running[slot];
    for (const auto& a : r.placement) {
      cluster.Release(a.node, sched::SliceSpec(r.job, core::GpuCount(a.gpus)), a.gpus);
    }
    const double ran = static_cast<double>(now - r.started_s);
    // A job on a share of one GPU keeps only that share busy.
    const double gpus = r.job.gpu_milli < core::kGpuMilli
                            ? static_cast<double>(r.job.gpu_milli) / core::kGpuMilli
                            : static_cast<double>(sched::GpusOf(r.placement));
    result.busy_gpu_s += gpus * ran;
    running_slot[running.back().job.id] = slot;
    running[slot] = std::move(running.back());
    running.pop_back();
    running_index.SwapRemove(slot);
    running_slot.erase(id);
    return ran;
  };

  // Work lost to spot interruptions: the progress since the job's last checkpoint is redone, and
  // the restart costs the preemption overhead.
  double lost_gpu_s = 0;
  int64_t jobs_interrupted = 0;
  auto interrupt = [&](sched::JobId id, int64_t now) {
    const Active act = active.at(id);
    const TraceJob& t = jobs[index_of.at(id)];
    const double ran = stop(id, now);
    const int64_t every = config.autoscale.checkpoint_interval_s;
    const double kept =
        every > 0 ? std::floor(ran / static_cast<double>(every)) * static_cast<double>(every) : 0.0;
    work_left[id] = std::max(0.0, act.remaining - kept * act.rate) + config.preemption_overhead_s;
    attained[id] += static_cast<double>(act.gpus) * ran;
    lost_gpu_s += static_cast<double>(act.gpus) * (ran - kept + config.preemption_overhead_s);
    ++jobs_interrupted;
    active.erase(id);
    log(now, "interrupt", id, "");
    enqueue(t, now);
  };
  // A consolidation move: the job gets its grace period, so it checkpoints and keeps all its
  // progress; the move costs the restart overhead only.
  int64_t jobs_moved = 0;
  double moved_lost_gpu_s = 0;
  auto move_off = [&](sched::JobId id, int64_t now) {
    const Active act = active.at(id);
    const TraceJob& t = jobs[index_of.at(id)];
    const double ran = stop(id, now);
    work_left[id] = std::max(0.0, act.remaining - ran * act.rate) + config.preemption_overhead_s;
    attained[id] += static_cast<double>(act.gpus) * ran;
    moved_lost_gpu_s += static_cast<double>(act.gpus) * config.preemption_overhead_s;
    ++jobs_moved;
    active.erase(id);
    log(now, "move", id, "");
    enqueue(t, now);
  };
  // Starts (or restarts, after a resize) trace job `t` as `job` on `placement` at `now`.
  auto launch = [&](const TraceJob& t, sched::QueuedJob job,
                    std::vector<sched::Allocation> placement, int64_t now, const char* what) {
    sched::RunningJob r;
    r.placement = std::move(placement);
    r.started_s = now;
    r.job = std::move(job);
    double speed = HUGE_VAL;
    std::string where;
    for (const auto& a : r.placement) {
      cluster.Allocate(a.node, sched::SliceSpec(r.job, core::GpuCount(a.gpus)), a.gpus);
      speed = std::min(speed, catalog.model(spec.nodes[a.node].model).relative_speed);
      if (!where.empty()) where += ' ';
      where += std::to_string(a.node) + ":" + std::to_string(a.gpus);
    }
    Active act;
    act.gpus = sched::GpusOf(r.placement);
    act.rate = speed;
    if (act.gpus != t.num_gpus && r.job.gpu_milli >= core::kGpuMilli) {
      act.rate *= ElasticSpeedup(act.gpus, config.elastic_efficiency) /
                  ElasticSpeedup(t.num_gpus, config.elastic_efficiency);
    }
    if (static_cast<int>(r.placement.size()) > sched::MinimumNodes(act.gpus, max_node_gpus)) {
      act.rate /= config.spread_slowdown;
    }
    act.remaining = work_left.at(t.id);
    act.finish_s = now + static_cast<int64_t>(std::ceil(act.remaining / act.rate));
    act.epoch = ++epoch_counter;
    events.push(Event{act.finish_s, 0, t.id, act.epoch});
    // Wake the scheduler when the job's priority class changes (preemptive policies), and when an
    // elastic job below its most may grow.
    arm_class_wake(r.job, act.gpus, attained[t.id], now, act.finish_s, act.epoch);
    if (sched::IsElastic(r.job) && act.gpus < r.job.total_gpus) {
      const int64_t at = now + static_cast<int64_t>(std::ceil(config.elastic_grow_after_s));
      if (at < act.finish_s && wakes.insert(at).second) events.push(Event{at, 1, -1, 0});
    }
    log(now, what, t.id, where);
    active.emplace(t.id, act);
    running_slot.emplace(t.id, running.size());
    running.push_back(std::move(r));
    running_index.Append(running, now);
  };
  auto fleet_pending = [&] {
    return fleet && scheduler.waiting() > 0 && fleet->NextEventTime() != INT64_MAX;
  };

  size_t next = 0;
  while (next < jobs.size() || !events.empty() || fleet_pending()) {
    int64_t now = INT64_MAX;
    if (!events.empty()) now = events.top().time;
    if (next < jobs.size()) now = std::min(now, jobs[next].submit_s);
    // The fleet's events matter only while some job is still to run.
    if (fleet && (next < jobs.size() || !active.empty() || scheduler.waiting() > 0)) {
      now = std::min(now, fleet->NextEventTime());
    }
    // Completions (and class changes) at `now`.
    while (!events.empty() && events.top().time == now) {
      const Event ev = events.top();
      events.pop();
      auto act = active.find(ev.id);
      if (act == active.end() || act->second.epoch != ev.epoch) continue;
      if (ev.kind != 0) {
        // A class change: wake again at the next one (the pass after this batch sees this one).
        const sched::RunningJob& r = running[running_slot.at(ev.id)];
        const int gpus = act->second.gpus;
        const double attained_now = attained[ev.id] + gpus * static_cast<double>(now - r.started_s);
        arm_class_wake(r.job, gpus, attained_now, now, act->second.finish_s, ev.epoch);
        continue;
      }
      const double last_run_s = stop(ev.id, now);
      const TraceJob& finished = jobs[index_of.at(ev.id)];
      JobOutcome& done = result.jobs[index_of.at(ev.id)];
      done.finish_s = now;
      predictor.Observe(done.vc, done.num_gpus, static_cast<double>(done.duration_s));
      // Learned under the size it is ranked by (an elastic job's most, as its QueuedJob says).
      const int ranked_gpus = IsElastic(finished) ? finished.max_gpus : finished.num_gpus;
      if (fresh_policy &&
          fresh_policy->Learn(ranked_gpus, attained[ev.id] + act->second.gpus * last_run_s)) {
        scheduler.Rekey();
        running_index.RecomputeAll(running, now);  // running jobs' classes changed too
      }
      log(now, "finish", ev.id, "");
      active.erase(act);
      if (fleet) fleet->MarkCompletion();
    }
    // Boots, wake-ups and spot interruptions at `now`.
    if (fleet) {
      for (const int node : fleet->Advance(cluster, now)) {
        std::vector<sched::JobId> victims;
        for (const sched::RunningJob& r : running) {
          for (const auto& a : r.placement) {
            if (a.node == node) {
              victims.push_back(r.job.id);
              break;
            }
          }
        }
        for (const sched::JobId id : victims) interrupt(id, now);
        fleet->Remove(cluster, node, now);
      }
    }
    // Arrivals at `now`.
    for (; next < jobs.size() && jobs[next].submit_s == now; ++next) {
      const TraceJob& t = jobs[next];
      double estimate = std::nan("");  // the prediction at arrival (policies that use one)
      if (queue_policy.estimates() == sched::Estimates::kPredicted) {
        estimate = predictor.Predict(t.vc, t.num_gpus);
        result.jobs[next].predicted_s = estimate;
      }
      estimate_of[t.id] = estimate;
      work_left[t.id] = static_cast<double>(t.duration_s);
      attained[t.id] = 0;
      enqueue(t, now);
      if (fleet) fleet->MarkChanged();
    }
    // With elastic jobs running, idle GPUs may be lent to them: the scheduler is asked then too.
    const bool may_grow =
        running_index.elastic_jobs() > 0 && cluster.used_gpu_milli() < cluster.total_gpu_milli();
    if (scheduler.waiting() > 0 || may_grow) {
      scheduler.PromoteStarved(now);
      ++result.scheduler_calls;
      running_index.AdvanceTo(running, now);
      for (sched::Decision& d : scheduler.Schedule(cluster, running, now, rng, &running_index)) {
        const size_t i = index_of.at(d.job);
        const TraceJob& t = jobs[i];
        if (d.kind == sched::Decision::Kind::kPreempt) {
          const Active act = active.at(t.id);
          const double ran = stop(t.id, now);
          // Progress is kept; restarting from the checkpoint costs the overhead.
          work_left[t.id] =
              std::max(0.0, act.remaining - ran * act.rate) + config.preemption_overhead_s;
          attained[t.id] += static_cast<double>(act.gpus) * ran;
          active.erase(t.id);
          ++result.preemptions;
          log(now, "preempt", t.id, "");
          enqueue(t, now);
          continue;
        }
        if (d.kind == sched::Decision::Kind::kResize) {
          // A checkpoint-restart on the new placement: progress kept, the restart overhead paid.
          const Active act = active.at(t.id);
          const double ran = stop(t.id, now);
          work_left[t.id] =
              std::max(0.0, act.remaining - ran * act.rate) + config.preemption_overhead_s;
          attained[t.id] += static_cast<double>(act.gpus) * ran;
          active.erase(t.id);
          // Restarted with the service it has had so far (its class and estimate follow from it),
          // as a preempted job is when it starts again.
          sched::QueuedJob job = queued_of(t, now);
          const bool grow = sched::GpusOf(d.placement) > act.gpus;
          ++(grow ? result.grows : result.shrinks);
          launch(t, job, std::move(d.placement), now, grow ? "grow" : "shrink");
          continue;
        }
        sched::QueuedJob job = queued_of(t, now);
        scheduler.Remove(t.id);
        waiting_jobs.erase(t.id);
        if (result.jobs[i].start_s < 0) result.jobs[i].start_s = now;
        launch(t, std::move(job), std::move(d.placement), now, "start");
      }
    }
    // Wake up for the next starvation promotion, once per distinct time.
    if (const double promote = scheduler.NextPromotion(); std::isfinite(promote)) {
      const int64_t at = std::max(now + 1, static_cast<int64_t>(std::ceil(promote)));
      if (wakes.insert(at).second) events.push(Event{at, 1, -1, 0});
    }
    if (fleet) {
      auto waiting_now = [&] {
        std::vector<scale::WaitingJob> out;
        out.reserve(waiting_jobs.size());
        for (const auto& [id, q] : waiting_jobs) {
          out.push_back({q, config.autoscale.jobs_restartable});
        }
        // Hash order is not a stable order: the planner sorts, but ties must not depend on it.
        std::sort(out.begin(), out.end(),
                  [](const auto& a, const auto& b) { return a.job.id < b.job.id; });
        return out;
      };
      auto running_now = [&] {
        std::vector<scale::RunningJobView> out;
        out.reserve(running.size());
        for (const sched::RunningJob& r : running) {
          scale::RunningJobView v;
          v.run = r;
          v.restartable = config.autoscale.jobs_restartable;
          v.restart_overhead_s = config.preemption_overhead_s;  // run time left: unknown
          out.push_back(std::move(v));
        }
        return out;
      };
      fleet->AfterSchedule(cluster, waiting_now, running_now, scheduler.waiting() > 0, now,
                           placement_policy, rng);
      for (const scale::Plan::Consolidation& c : fleet->TakeConsolidations()) {
        for (const sched::JobId id : c.jobs) move_off(id, now);
        fleet->Consolidated(cluster, c.node, now,
                            static_cast<int64_t>(std::ceil(config.preemption_overhead_s)));
      }
    }
    const int64_t job_milli = cluster.used_gpu_milli() - (fleet ? fleet->blocked_gpu_milli() : 0);
    const int busy = static_cast<int>((job_milli + core::kGpuMilli - 1) / core::kGpuMilli);
    if (result.busy_gpus.empty() || result.busy_gpus.back().second != busy) {
      result.busy_gpus.emplace_back(now, busy);
    }
    if (events.empty() && next == jobs.size() && scheduler.waiting() > 0 && !fleet_pending()) {
      break;  // stuck
    }
  }
  int64_t last = 0;
  for (const auto& o : result.jobs) last = std::max(last, o.finish_s);
  result.makespan_s = jobs.empty() ? 0 : last - jobs.front().submit_s;
  if (fleet) {
    result.fleet = fleet->Finish(last);
    result.fleet.gpu_s_lost = lost_gpu_s;
    result.fleet.jobs_interrupted = jobs_interrupted;
    result.fleet.jobs_moved = jobs_moved;
    result.fleet.gpu_s_lost_moves = moved_lost_gpu_s;
  }
  return result;
}

}  // namespace gpufleet::sim

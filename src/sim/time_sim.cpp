#include "sim/time_sim.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
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

namespace {

struct Active {
  double rate = 1;       // reference seconds of work done per second
  double remaining = 0;  // reference seconds of work left at the start of this run
  int64_t finish_s = 0;
  int64_t epoch = 0;  // which run of the job this is (changes when it restarts)
};

}  // namespace

core::Result<TimeSimResult> RunTimeSim(const std::vector<TraceJob>& jobs, const ClusterSpec& spec,
                                       const sched::QueuePolicy& queue_policy,
                                       const sched::PlacementPolicy& placement_policy,
                                       const TimeSimConfig& config, bool log_decisions) {
  const core::GpuCatalog& catalog = core::GpuCatalog::Builtin();
  core::ClusterSnapshot cluster(spec.nodes);
  TimeSimResult result;
  result.policy = std::string(queue_policy.Name());
  result.total_gpus = cluster.total_gpus();
  int max_node_gpus = 0;
  for (const auto& n : spec.nodes) max_node_gpus = std::max(max_node_gpus, n.num_gpus);
  for (size_t i = 0; i < jobs.size(); ++i) {
    // The same check the live controller makes at submit: a job that can never start would
    // wait forever (and hold every queue behind its reservation).
    sched::JobAsk ask;
    ask.total_gpus = jobs[i].num_gpus;
    ask.gpu_milli = jobs[i].gpu_milli;
    ask.gpu_models = jobs[i].gpu_models;
    ask.cpu_milli_per_gpu = jobs[i].cpu_milli_per_gpu;
    ask.memory_mib_per_gpu = jobs[i].memory_mib_per_gpu;
    if (auto why = sched::NeverFits(sched::BuildQueuedJob(ask, sched::Estimates::kNone, {}),
                                    spec.nodes, config.allow_spread)) {
      return core::Error{"job " + std::to_string(jobs[i].id) + " on cluster " + spec.name + ": " +
                         why->message};
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
    ask.submit_s = t.submit_s;
    ask.queue = t.vc;
    sched::JobRunTime run_time;
    run_time.predicted_s = estimate_of.at(t.id);
    run_time.true_s = static_cast<double>(t.duration_s);
    run_time.attained_gpu_s = attained[t.id];
    run_time.waiting_since_s = now;
    return sched::BuildQueuedJob(ask, queue_policy.estimates(), run_time);
  };
  auto enqueue = [&](const TraceJob& t, int64_t now) { scheduler.Enqueue(queued_of(t, now)); };
  // Takes `id` off the cluster at `now`; returns the GPU-seconds it ran since its start.
  auto stop = [&](sched::JobId id, int64_t now) {
    const size_t slot = running_slot.at(id);
    sched::RunningJob& r = running[slot];
    for (const auto& a : r.placement) {
      cluster.Release(a.node, sched::SliceSpec(r.job, std::popcount(a.gpus)), a.gpus);
    }
    const double ran = static_cast<double>(now - r.started_s);
    // A job on a share of one GPU keeps only that share busy.
    const double gpus = r.job.gpu_milli < core::kGpuMilli
                            ? static_cast<double>(r.job.gpu_milli) / core::kGpuMilli
                            : static_cast<double>(r.job.total_gpus);
    result.busy_gpu_s += gpus * ran;
    running_slot[running.back().job.id] = slot;
    running[slot] = std::move(running.back());
    running.pop_back();
    running_slot.erase(id);
    return ran;
  };

  size_t next = 0;
  while (next < jobs.size() || !events.empty()) {
    int64_t now = events.empty() ? jobs[next].submit_s : events.top().time;
    if (next < jobs.size()) now = std::min(now, jobs[next].submit_s);
    // Completions (and class changes) at `now`.
    while (!events.empty() && events.top().time == now) {
      const Event ev = events.top();
      events.pop();
      auto act = active.find(ev.id);
      if (act == active.end() || act->second.epoch != ev.epoch || ev.kind != 0) continue;
      stop(ev.id, now);
      JobOutcome& done = result.jobs[index_of.at(ev.id)];
      done.finish_s = now;
      predictor.Observe(done.vc, done.num_gpus, static_cast<double>(done.duration_s));
      log(now, "finish", ev.id, "");
      active.erase(act);
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
    }
    if (scheduler.waiting() > 0) {
      scheduler.PromoteStarved(now);
      ++result.scheduler_calls;
      for (sched::Decision& d : scheduler.Schedule(cluster, running, now, rng)) {
        const size_t i = index_of.at(d.job);
        const TraceJob& t = jobs[i];
        if (d.kind == sched::Decision::Kind::kPreempt) {
          const Active& act = active.at(t.id);
          const double ran = stop(t.id, now);
          // Progress is kept; restarting from the checkpoint costs the overhead.
          work_left[t.id] =
              std::max(0.0, act.remaining - ran * act.rate) + config.preemption_overhead_s;
          attained[t.id] += static_cast<double>(t.num_gpus) * ran;
          active.erase(t.id);
          ++result.preemptions;
          log(now, "preempt", t.id, "");
          enqueue(t, now);
          continue;
        }
        sched::RunningJob r;
        r.placement = std::move(d.placement);
        r.started_s = now;
        r.job = queued_of(t, now);
        double speed = HUGE_VAL;
        std::string where;
        for (const auto& a : r.placement) {
          cluster.Allocate(a.node, sched::SliceSpec(r.job, std::popcount(a.gpus)), a.gpus);
          speed = std::min(speed, catalog.model(spec.nodes[a.node].model).relative_speed);
          if (!where.empty()) where += ' ';
          where += std::to_string(a.node) + ":" + std::to_string(a.gpus);
        }
        Active act;
        act.rate = speed;
        if (static_cast<int>(r.placement.size()) > sched::MinimumNodes(t.num_gpus, max_node_gpus)) {
          act.rate /= config.spread_slowdown;
        }
        act.remaining = work_left.at(t.id);
        act.finish_s = now + static_cast<int64_t>(std::ceil(act.remaining / act.rate));
        act.epoch = ++epoch_counter;
        events.push(Event{act.finish_s, 0, t.id, act.epoch});
        // Wake the scheduler when the job's priority class changes (preemptive policies).
        const double change = queue_policy.NextClassChange(attained[t.id]);
        if (std::isfinite(change)) {
          const int64_t at = now + static_cast<int64_t>(std::ceil((change - attained[t.id]) /
                                                                  static_cast<double>(t.num_gpus)));
          if (at < act.finish_s) events.push(Event{at, 1, t.id, act.epoch});
        }
        scheduler.Remove(t.id);
        if (result.jobs[i].start_s < 0) result.jobs[i].start_s = now;
        log(now, "start", t.id, where);
        active.emplace(t.id, act);
        running_slot.emplace(t.id, running.size());
        running.push_back(std::move(r));
      }
    }
    // Wake up for the next starvation promotion, once per distinct time.
    if (const double promote = scheduler.NextPromotion(); std::isfinite(promote)) {
      const int64_t at = std::max(now + 1, static_cast<int64_t>(std::ceil(promote)));
      if (wakes.insert(at).second) events.push(Event{at, 1, -1, 0});
    }
    const int busy =
        static_cast<int>((cluster.used_gpu_milli() + core::kGpuMilli - 1) / core::kGpuMilli);
    if (result.busy_gpus.empty() || result.busy_gpus.back().second != busy) {
      result.busy_gpus.emplace_back(now, busy);
    }
    if (events.empty() && next == jobs.size() && scheduler.waiting() > 0) break;  // stuck
  }
  int64_t last = 0;
  for (const auto& o : result.jobs) last = std::max(last, o.finish_s);
  result.makespan_s = jobs.empty() ? 0 : last - jobs.front().submit_s;
  return result;
}

namespace {

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

JctSummary Summarize(const TimeSimResult& result) {
  JctSummary s;
  s.jobs = static_cast<int64_t>(result.jobs.size());
  std::vector<double> jct;
  double queue_sum = 0;
  int64_t started = 0;
  for (const auto& o : result.jobs) {
    if (o.start_s >= 0) {
      queue_sum += static_cast<double>(o.start_s - o.submit_s);
      ++started;
    }
    if (o.finish_s >= 0) jct.push_back(static_cast<double>(o.finish_s - o.submit_s));
  }
  s.finished = static_cast<int64_t>(jct.size());
  s.unfinished = s.jobs - s.finished;
  std::sort(jct.begin(), jct.end());
  double sum = 0;
  for (double v : jct) sum += v;
  s.avg_jct_s = jct.empty() ? 0 : sum / static_cast<double>(jct.size());
  s.p50_jct_s = Percentile(jct, 0.50);
  s.p95_jct_s = Percentile(jct, 0.95);
  s.p99_jct_s = Percentile(jct, 0.99);
  s.avg_queue_s = started == 0 ? 0 : queue_sum / static_cast<double>(started);
  std::vector<double> rel;
  double abs_sum = 0;
  for (const auto& o : result.jobs) {
    if (std::isnan(o.predicted_s)) continue;
    const double err = std::fabs(o.predicted_s - static_cast<double>(o.duration_s));
    abs_sum += err;
    rel.push_back(err / static_cast<double>(std::max<int64_t>(o.duration_s, 1)));
  }
  s.predicted_jobs = static_cast<int64_t>(rel.size());
  if (!rel.empty()) {
    std::sort(rel.begin(), rel.end());
    s.prediction_median_rel_error = Percentile(rel, 0.5);
    s.prediction_mae_s = abs_sum / static_cast<double>(rel.size());
  }
  std::map<std::string, std::pair<double, int64_t>> by_vc;  // (sum of slowdowns, jobs)
  for (const auto& o : result.jobs) {
    if (o.finish_s < 0) continue;
    auto& [sum_slowdown, n] = by_vc[o.vc];
    sum_slowdown += static_cast<double>(o.finish_s - o.submit_s) /
                    static_cast<double>(std::max<int64_t>(o.duration_s, 1));
    ++n;
  }
  double jain_sum = 0, jain_sq = 0;
  for (const auto& [vc, acc] : by_vc) {
    const double mean = acc.first / static_cast<double>(acc.second);
    s.vc_slowdown.emplace_back(vc, mean);
    jain_sum += mean;
    jain_sq += mean * mean;
  }
  if (!s.vc_slowdown.empty()) {
    s.jain_index = jain_sum * jain_sum / (static_cast<double>(s.vc_slowdown.size()) * jain_sq);
  }
  const double capacity =
      static_cast<double>(result.total_gpus) * static_cast<double>(result.makespan_s);
  s.utilization = capacity > 0 ? result.busy_gpu_s / capacity : 0;
  return s;
}

std::vector<double> HourlyUtilization(const TimeSimResult& result) {
  std::vector<double> hours;
  if (result.busy_gpus.empty() || result.total_gpus == 0) return hours;
  const int64_t start = result.jobs.empty() ? 0 : result.jobs.front().submit_s;
  const int64_t end = start + result.makespan_s;
  const size_t n = static_cast<size_t>((end - start + 3599) / 3600);
  std::vector<double> busy_s(n, 0.0);
  for (size_t i = 0; i < result.busy_gpus.size(); ++i) {
    int64_t from = result.busy_gpus[i].first;
    const int64_t to = i + 1 < result.busy_gpus.size() ? result.busy_gpus[i + 1].first : end;
    const int gpus = result.busy_gpus[i].second;
    while (from < to) {
      const size_t h = static_cast<size_t>((from - start) / 3600);
      if (h >= n) break;
      const int64_t hour_end = start + static_cast<int64_t>(h + 1) * 3600;
      const int64_t upto = std::min(to, hour_end);
      busy_s[h] += static_cast<double>(gpus) * static_cast<double>(upto - from);
      from = upto;
    }
  }
  for (double& b : busy_s) b /= 3600.0 * static_cast<double>(result.total_gpus);
  return busy_s;
}

}  // namespace gpufleet::sim

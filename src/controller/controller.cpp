#include "controller/controller.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string_view>
#include <tuple>

#include "advise/advisor.h"
#include "controller/job_logs.h"
#include "controller/settlement.h"
#include "core/duration.h"
#include "core/gpu_catalog.h"
#include "core/job.h"
#include "core/text.h"
#include "sched/policy_registry.h"
#include "store/job_columns.h"

namespace gpufleet::controller {
namespace {

constexpr auto kTick = std::chrono::milliseconds(50);
// An ended rank's job is settled once its log has reached the controller, or after this long.
constexpr int64_t kLogDrainMs = 5000;
// Heartbeats held at once (long poll); more are answered at once. The API serves with more
// workers than this (api_server.cpp), so users always find free ones.
constexpr int kMaxHeldHeartbeats = 16;
// A node's GPU health changes recorded in the audit log (and on stderr) per hour; the rest are
// counted and the count recorded when the hour is over.
constexpr int64_t kHealthWindowMs = 3'600'000;
constexpr int kMaxHealthRecords = 64;
// The most of a rank's end reason a node's word is kept of (its agent sends at most this much).
constexpr std::size_t kMaxRankReason = 4096;

// Wall time since `start`, in milliseconds (for the pass's own figures, ControllerStats).
double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

std::vector<int> MaskIndices(core::GpuMask mask) {
  std::vector<int> out;
  for (int g = 0; g < 32; ++g) {
    if (mask & (1u << g)) out.push_back(g);
  }
  return out;
}

core::GpuMask MaskOf(const std::vector<int>& indices) {
  core::GpuMask mask = 0;
  for (int g : indices) {
    if (g >= 0 && g < 32) mask |= 1u << g;
  }
  return mask;
}

// What one rank of `job` takes on its node: its GPUs, and the job's CPU and memory (a CPU-only
// rank, no GPU, still takes those).
core::JobSpec RankSlice(const sched::QueuedJob& job, core::GpuMask gpus) {
  return sched::SliceSpec(job, std::max(1, std::popcount(gpus)));
}

// A job's shape on one of its nodes, as the workload profile counts it.
core::JobSpec ShapeOf(const store::JobRecord& job) {
  core::JobSpec shape;
  shape.cpu_milli = job.cpu_milli;
  shape.memory_mib = job.memory_mib;
  shape.num_gpu = job.gpus;
  shape.gpu_milli = job.gpu_milli;
  if (auto models = core::GpuCatalog::Builtin().ParseSpec(job.gpu_type); models) {
    shape.gpu_models = models.value();
  }
  return shape;
}

}  // namespace

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

core::Result<std::unique_ptr<Controller>> Controller::Create(store::Store& store,
                                                             ControllerOptions options) {
  auto queue = sched::MakeQueuePolicy(options.queue_policy);
  if (!queue) {
    return core::Error{"unknown queue policy '" + options.queue_policy +
                       "'; known: " + sched::QueuePolicyNames()};
  }
  if (queue->estimates() == sched::Estimates::kOracle) {
    return core::Error{"queue policy '" + options.queue_policy +
                           "' orders jobs by their true run times, which only a replay knows; "
                           "live, use qssf or las-qssf (predicted run times)",
                       core::ErrorCode::kInvalid, "policy"};
  }
  auto placement = sched::MakePlacementPolicy(options.placement_policy);
  if (!placement) {
    return core::Error{"unknown placement policy '" + options.placement_policy +
                       "'; known: " + sched::PlacementPolicyNames()};
  }
  return std::unique_ptr<Controller>(
      new Controller(store, std::move(options), std::move(queue), std::move(placement)));
}

Controller::Controller(store::Store& store, ControllerOptions options,
                       std::unique_ptr<sched::QueuePolicy> queue_policy,
                       std::unique_ptr<sched::PlacementPolicy> placement_policy)
    : store_(store),
      options_(std::move(options)),
      logs_(options_.data_dir),
      queue_policy_(std::move(queue_policy)),
      placement_policy_(std::move(placement_policy)),
      // Node epochs only grow, across restarts too: they start at the system clock's reading
      // (not options_.clock's) and are only compared for change.
      nodes_(options_.local_node, NowMs()),
      scheduler_(*queue_policy_, *placement_policy_, /*allow_spread=*/false) {
  if (!options_.queue_weights.empty()) scheduler_.SetQueueWeights(options_.queue_weights);
  scheduler_.SetElasticGrowAfter(options_.elastic_grow_after_s);
  scheduler_.SetGrowthNodes(options_.growth_nodes, options_.growth_nodes_on_demand);
  if (options_.workload_profile) placement_policy_->Prepare(*options_.workload_profile);
  // Node epochs only grow, across restarts too (they are only compared for change).
  RebuildClusterLocked();
}

Controller::~Controller() { JoinLoop(); }  // no last flush: the store may be gone already

std::string Controller::LogPath(int64_t id, int rank) const { return logs_.Path(id, rank); }

int64_t Controller::LogRoomLocked(const std::string& user) const {
  if (options_.log_quota_bytes <= 0) return std::numeric_limits<int64_t>::max();
  const auto it = live_log_bytes_.find(user);
  const int64_t held = it == live_log_bytes_.end() ? 0 : it->second;
  return std::max<int64_t>(0, options_.log_quota_bytes - held);
}

int64_t Controller::LogBytesOf(const Active& a) {
  int64_t bytes = 0;
  for (const Rank& r : a.ranks) bytes += r.log_acked;
  return bytes;
}

void Controller::AddLiveLogLocked(const std::string& user, int64_t bytes) {
  if (bytes == 0) return;
  const auto it = live_log_bytes_.try_emplace(user, 0).first;
  it->second += bytes;
  if (it->second <= 0) live_log_bytes_.erase(it);
}

void Controller::KeepEarlierLogsLocked(const Active& a) {
  const int64_t bytes = LogBytesOf(a);
  if (bytes == 0) return;
  EarlierLogs& earlier = earlier_logs_[a.job.id];
  earlier.user = a.job.user;
  earlier.bytes += bytes;
}

void Controller::ForgetEarlierLogsLocked(int64_t id) {
  const auto found = earlier_logs_.find(id);
  if (found == earlier_logs_.end()) return;
  AddLiveLogLocked(found->second.user, -found->second.bytes);
  earlier_logs_.erase(found);
}

void Controller::CountLiveLogLocked(const Active& a, int sign) {
  AddLiveLogLocked(a.job.user, sign * LogBytesOf(a));
}

void Controller::SetEvents(ControllerEvents* events) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_ = events;
}

std::vector<Controller::GpuSeries> Controller::JobGpuSeries(const store::JobRecord& job) const {
  std::vector<GpuSeries> out;
  // A requeued job's start and end are cleared until it runs again, so a job that never ran on
  // its placement has no start here; a scheduled one has not started on it yet.
  if (job.start_ms <= 0 || job.state == store::JobState::kScheduled ||
      job.state == store::JobState::kPending) {
    return out;
  }
  const int64_t end_ms = job.state == store::JobState::kRunning ? 0 : job.end_ms;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const store::RankPlacement& rank : job.placement) {
    for (int g : rank.gpus) {
      out.push_back({rank.node, g, gpu_history_.Get(rank.node, g, job.start_ms, end_ms)});
    }
  }
  return out;
}

std::vector<Controller::QueueNow> Controller::Queues() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::string, QueueNow> queues;
  auto entry = [&](const std::string& name) -> QueueNow& {
    QueueNow& q = queues[name];
    if (q.name.empty()) {
      q.name = name;
      auto w = options_.queue_weights.find(name);
      q.weight = w != options_.queue_weights.end() ? w->second : 1.0;
    }
    return q;
  };
  for (const auto& [name, weight] : options_.queue_weights) entry(name);
  for (const auto& [id, a] : active_) {
    QueueNow& q = entry(a.job.queue);
    ++q.running;
    q.gpus_allocated += HeldGpus(a) * a.job.GpuShare();  // an elastic job: what it runs on now
  }
  for (const auto& [id, j] : waiting_) {
    QueueNow& q = entry(j.queue);
    ++q.waiting;
    q.gpus_waiting += j.GpusAsked();
  }
  std::vector<QueueNow> out;
  for (auto& [name, q] : queues) out.push_back(std::move(q));
  return out;
}

sched::JobAsk Controller::AskOf(const store::JobRecord& job) {
  sched::JobAsk ask;
  ask.id = job.id;
  ask.total_gpus = std::max(1, job.gpus) * std::max(1, job.nodes);
  ask.nodes = job.nodes;
  ask.min_gpus = job.nodes <= 1 ? job.min_gpus : 0;
  ask.gpu_milli = job.gpu_milli;
  // A job's CPU and memory limits are per node; placement counts them against nodes that report
  // theirs.
  ask.cpu_milli_per_gpu = job.cpu_milli / std::max(1, job.gpus);
  ask.memory_mib_per_gpu = job.memory_mib / std::max(1, job.gpus);
  if (!job.gpu_type.empty()) {
    if (auto models = core::GpuCatalog::Builtin().ParseSpec(job.gpu_type)) {
      ask.gpu_models = models.value();
    }
  }
  ask.submit_s = job.submit_ms / 1000;
  ask.queue = job.queue;
  ask.priority = job.priority;
  ask.restartable = job.restartable;
  if (job.time_limit_s > 0) ask.time_limit_s = static_cast<double>(job.time_limit_s);
  return ask;
}

sched::QueuedJob Controller::QueuedOf(const store::JobRecord& job) const {
  sched::JobRunTime run_time;
  run_time.attained_gpu_s = job.attained_gpu_s;
  run_time.waiting_since_s = job.submit_ms / 1000;
  if (auto r = requeued_at_s_.find(job.id); r != requeued_at_s_.end()) {
    run_time.waiting_since_s = r->second;
  }
  // The prediction, made once (a policy's key must not change while the job waits).
  auto made = predictions_.find(job.id);
  if (made == predictions_.end()) {
    made = predictions_.emplace(job.id, predictor_.Predict(TraitsOf(job))).first;
  }
  run_time.predicted_s = made->second.seconds;
  return sched::BuildQueuedJob(AskOf(job), queue_policy_->estimates(), run_time);
}

sched::JobTraits Controller::TraitsOf(const store::JobRecord& job) {
  sched::JobTraits t;
  t.user = job.user;
  t.queue = job.queue;
  t.name = job.name;
  t.command = sched::CommandOf(job.argv);
  t.gpus = std::max(1, job.gpus) * std::max(1, job.nodes);
  return t;
}

void Controller::LearnRuntimeLocked(const store::JobRecord& job, double runtime_s,
                                    const sched::RuntimePrediction* predicted) {
  if (runtime_s < 0) return;
  if (predicted != nullptr) {
    const double error = std::fabs(predicted->seconds - runtime_s);
    prediction_abs_error_sum_ += error;
    ++prediction_checked_;
    prediction_relative_errors_.push_back(error / std::max(runtime_s, 1.0));
    if (prediction_relative_errors_.size() > 1000) prediction_relative_errors_.pop_front();
  }
  const sched::JobTraits traits = TraitsOf(job);
  predictor_.Observe(traits, runtime_s);
  // Learning queue policies (`gittins`) learn the GPU-service finished jobs needed, as in replay:
  // under the most GPUs the job asks (an elastic job's table is its most's), counting each run at
  // the GPUs it held. A CPU-only job received no GPU-service: nothing to learn.
  if (job.gpus > 0 && queue_policy_->Learn(traits.gpus, ServiceAtSuccess(job, runtime_s))) {
    scheduler_.Rekey();
  }
}

double Controller::ServiceAtSuccess(const store::JobRecord& job, double last_run_s) {
  int held = 0;
  for (const store::RankPlacement& r : job.placement) held += static_cast<int>(r.gpus.size());
  if (job.placement.empty()) held = TraitsOf(job).gpus;
  return job.attained_gpu_s + held * last_run_s;
}

std::optional<sched::RuntimePrediction> Controller::Prediction(int64_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = predictions_.find(id);
  if (it == predictions_.end()) return std::nullopt;
  return it->second;
}

Controller::PredictorView Controller::Predictor() const {
  std::lock_guard<std::mutex> lock(mutex_);
  PredictorView v;
  v.learnt = predictor_.observed();
  v.checked = prediction_checked_;
  if (prediction_checked_ > 0) {
    v.mean_absolute_error_s = prediction_abs_error_sum_ / static_cast<double>(prediction_checked_);
    std::vector<double> errors(prediction_relative_errors_.begin(),
                               prediction_relative_errors_.end());
    std::nth_element(errors.begin(), errors.begin() + errors.size() / 2, errors.end());
    v.median_relative_error = errors[errors.size() / 2];
  }
  return v;
}

void Controller::RebuildClusterLocked() {
  std::vector<core::NodeSpec> specs;
  NodeSummary summary;
  for (const NodeEntry& n : nodes_) {
    specs.push_back(n.spec);
    if (n.known) summary.nodes.push_back(n.spec);
  }
  placement_policy_->PrepareCluster(summary.nodes);  // the nodes whose sizes are known
  {
    std::lock_guard<std::mutex> lock(summary_mutex_);
    summary_ = std::move(summary);
  }
  cluster_ = core::ClusterSnapshot(std::move(specs));
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    const int gpus = nodes_[n].spec.num_gpus;
    if (nodes_[n].alive || gpus == 0) continue;
    // Nothing may be placed on a node that is not there: hold all of its GPUs.
    sched::QueuedJob blocker;
    blocker.total_gpus = gpus;
    cluster_.Allocate(static_cast<int>(n), sched::SliceSpec(blocker, gpus),
                      gpus == 32 ? ~core::GpuMask{0} : (core::GpuMask{1} << gpus) - 1);
  }
  for (auto& [id, a] : active_) {
    for (Rank& r : a.ranks) {
      const NodeEntry& node = nodes_[r.node];
      r.held = false;
      if (!node.alive) continue;  // held by the blocker until it returns
      const core::NodeState& s = cluster_.state(r.node);
      const core::JobSpec slice = RankSlice(a.queued, r.gpus);
      bool fits = slice.cpu_milli <= s.cpu_free && slice.memory_mib <= s.memory_free;
      for (int g : MaskIndices(r.gpus)) {
        if (g >= node.spec.num_gpus || s.gpu_free[g] < a.queued.gpu_milli) fits = false;
      }
      if (!fits) {
        // The node came back smaller than the job's placement: the rank cannot be there.
        r.ended = r.lost = true;
        r.reason = "node " + node.name +
                   " came back with fewer GPUs, CPUs or memory than the job was placed on";
        continue;
      }
      cluster_.Allocate(r.node, slice, r.gpus);
      r.held = true;
    }
  }
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    if (!nodes_[n].links.empty()) {
      // Placement picks well-connected GPU sets there; a table of another size is not used.
      (void)cluster_.SetGpuLinks(static_cast<int>(n), nodes_[n].links);
    }
  }
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    nodes_[n].held.clear();  // a new snapshot holds nothing yet
    HoldDrainedLocked(static_cast<int>(n));
  }
}

std::string Controller::DrainReason(const NodeEntry& n, int gpu) {
  if (auto d = n.drains.find(gpu); d != n.drains.end()) {
    return "drained by " + d->second.by + (d->second.reason.empty() ? "" : ": " + d->second.reason);
  }
  auto bad = n.unhealthy.find(gpu);
  if (bad == n.unhealthy.end()) return "";
  auto ack = n.acked.find(gpu);
  if (ack != n.acked.end() && ack->second == bad->second) return "";  // an admin undrained it
  return "unhealthy: " + bad->second;
}

void Controller::HoldDrainedLocked(int node) {
  NodeEntry& n = nodes_[node];
  if (!n.alive || node >= cluster_.size()) return;  // a node that is not there is held whole
  sched::QueuedJob blocker;
  blocker.total_gpus = 1;
  for (int g = 0; g < n.spec.num_gpus && g < 32; ++g) {
    const core::GpuMask bit = core::GpuMask{1} << g;
    if (!DrainReason(n, g).empty()) {
      // Whatever is free on it now, a share of it too (share jobs still running there keep
      // theirs until they end; then this runs again).
      const int free = cluster_.state(node).gpu_free[g];
      if (free <= 0) continue;
      blocker.gpu_milli = free;
      cluster_.Allocate(node, sched::SliceSpec(blocker, 1), bit);
      n.held[g].push_back(free);
    } else if (auto it = n.held.find(g); it != n.held.end()) {
      for (int milli : it->second) {  // released as allocated: the same spec each
        blocker.gpu_milli = milli;
        cluster_.Release(node, sched::SliceSpec(blocker, 1), bit);
      }
      n.held.erase(it);
    }
  }
}

void Controller::UpdateHealthLocked(int node, const std::vector<net::GpuFigure>& figures,
                                    int64_t now_ms) {
  NodeEntry& n = nodes_[node];
  std::map<int, std::string> bad;
  for (const net::GpuFigure& f : figures) {
    if (f.healthy || f.index < 0 || f.index >= n.spec.num_gpus) continue;
    bad[f.index] = f.health_reason.empty() ? std::string("unhealthy") : f.health_reason;
  }
  const auto record = [&](const std::string& what, const std::string& detail) {
    std::fprintf(stderr, "gpufleet: %s: %s\n", what.c_str(), detail.c_str());
    if (auto r = store_.Audit(0, "", what, detail, now_ms); !r) ++stats_.store_errors;
  };
  // An hour that left changes out is summed up at the first beat after it, changes or not, with
  // the GPUs unhealthy at its end (the last row of a GPU may have been left out).
  if (n.health_left_out > 0 && now_ms - n.health_window_ms >= kHealthWindowMs) {
    std::string unhealthy;
    for (const auto& [g, why] : n.unhealthy) {
      unhealthy +=
          (unhealthy.empty() ? "" : ", ") + ("GPU " + std::to_string(g)) + " (" + why + ")";
    }
    record("GPU health changes left out",
           "node " + n.name + ": " + std::to_string(n.health_left_out) +
               " more in the hour before (at most " + std::to_string(kMaxHealthRecords) +
               " are recorded an hour); unhealthy at its end: " +
               (unhealthy.empty() ? std::string("none") : unhealthy));
    n.health_left_out = 0;
  }
  if (bad == n.unhealthy) return;
  const auto event = [&](const std::string& what, const std::string& detail) {
    if (now_ms - n.health_window_ms >= kHealthWindowMs) {
      n.health_window_ms = now_ms;
      n.health_recorded = 0;
    }
    if (n.health_recorded >= kMaxHealthRecords) {
      ++n.health_left_out;
      return;
    }
    ++n.health_recorded;
    record(what, detail);
  };
  std::vector<int> newly;
  for (const auto& [g, why] : bad) {
    auto was = n.unhealthy.find(g);
    if (was != n.unhealthy.end() && was->second == why) continue;
    event("GPU drained", "node " + n.name + " GPU " + std::to_string(g) + " is unhealthy (" + why +
                             "): nothing new is placed on it; its jobs are stopped");
    newly.push_back(g);
  }
  for (const auto& [g, why] : n.unhealthy) {
    if (bad.count(g) == 0) {
      event("GPU healthy again", "node " + n.name + " GPU " + std::to_string(g) + " (was: " + why +
                                     ")");
    }
  }
  n.unhealthy = std::move(bad);
  for (auto it = n.acked.begin(); it != n.acked.end();) {  // a new problem drains again
    auto now = n.unhealthy.find(it->first);
    it = now == n.unhealthy.end() || now->second != it->second ? n.acked.erase(it) : std::next(it);
  }
  for (int g : newly) {
    const std::string why = DrainReason(n, g);
    if (why.empty()) continue;
    for (auto& [id, a] : active_) {
      if (!a.health_stop.empty() || a.cancel) continue;
      for (const Rank& r : a.ranks) {
        if (r.node != node || r.ended || !(r.gpus & (core::GpuMask{1} << g))) continue;
        a.health_stop = "GPU " + std::to_string(g) + " of node " + n.name + " became " + why;
        ++stats_.health_stops;
        StopRanksLocked(a);
        break;
      }
    }
  }
  HoldDrainedLocked(node);
  woken_ = true;
}

core::Result<std::pair<int, std::vector<int>>> Controller::DrainTargetLocked(
    const std::string& node, int gpu) const {
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    const NodeEntry& n = nodes_[k];
    if (n.name != node || !n.known) continue;
    if (gpu < -1 || gpu >= n.spec.num_gpus) {
      return core::Error{"gpu: node " + node + " has GPUs 0.." + std::to_string(n.spec.num_gpus - 1),
                         core::ErrorCode::kInvalid, "gpu"};
    }
    std::vector<int> gpus;
    for (int g = gpu < 0 ? 0 : gpu; g < (gpu < 0 ? n.spec.num_gpus : gpu + 1); ++g) {
      gpus.push_back(g);
    }
    return std::make_pair(static_cast<int>(k), std::move(gpus));
  }
  return core::Error{"no node " + node, core::ErrorCode::kNotFound, "node"};
}

core::Result<std::vector<int>> Controller::Drain(const std::string& node, int gpu,
                                                 const std::string& reason,
                                                 const std::string& by) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto target = DrainTargetLocked(node, gpu);
  if (!target) return target.failure();
  const auto& [k, gpus] = target.value();
  const int64_t now_ms = Now();
  for (int g : gpus) nodes_[k].drains[g] = store::GpuDrain{g, reason, by, now_ms};
  PersistNodeLocked(k, now_ms);
  HoldDrainedLocked(k);
  return gpus;
}

core::Result<std::vector<int>> Controller::Undrain(const std::string& node, int gpu) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto target = DrainTargetLocked(node, gpu);
  if (!target) return target.failure();
  const auto& [k, gpus] = target.value();
  NodeEntry& n = nodes_[k];
  std::vector<int> done;
  for (int g : gpus) {
    const bool was = !DrainReason(n, g).empty();
    n.drains.erase(g);
    if (auto bad = n.unhealthy.find(g); bad != n.unhealthy.end()) n.acked[g] = bad->second;
    if (was) done.push_back(g);
  }
  PersistNodeLocked(k, Now());
  HoldDrainedLocked(k);
  woken_ = true;
  return done;
}

core::Result<bool> Controller::Recover(int64_t now_ms) {
  // Sent to the nodes with each reply: they keep apart the jobs they recorded under another store.
  auto store_id = store_.StoreId();
  if (!store_id) return core::Error{store_id.error()};
  if (store_id.value().empty() || store_id.value().size() > 64 ||
      store_id.value().find_first_not_of("0123456789abcdef") != std::string::npos) {
    return core::Error{"store_id: the store's id (table meta, key store_id) is '" +
                           store_id.value() + "', not 1 to 64 lowercase hex digits",
                       core::ErrorCode::kInvalid, "store_id"};
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    store_id_ = store_id.value();
  }
  // The run-time history: SUCCEEDED jobs, learnt in the order they ended, each predicted first
  // (so the predictor's measured error covers the history too). At most the last 100,000, each
  // kept without its environment and with its argv cut to the command the predictor keys on: a
  // job's row may hold up to 512 KiB of them, so small pages too.
  std::vector<store::JobRecord> history;
  store::JobFilter page;
  page.state = store::JobState::kSucceeded;
  page.limit = 100;
  for (;;) {
    auto got = store_.ListJobs(page);
    if (!got) return core::Error{got.error()};
    if (got.value().empty()) break;
    page.after_id = got.value().back().id;
    for (store::JobRecord& j : got.value()) {
      if (j.start_ms <= 0 || j.end_ms < j.start_ms) continue;
      j.argv = {sched::CommandOf(j.argv)};
      j.env.clear();
      j.env.shrink_to_fit();
      history.push_back(std::move(j));
    }
    if (history.size() > 200000) {
      history.erase(history.begin(), history.end() - 100000);
    }
  }
  if (history.size() > 100000) history.erase(history.begin(), history.end() - 100000);
  std::stable_sort(history.begin(), history.end(),
                   [](const store::JobRecord& a, const store::JobRecord& b) {
                     return a.end_ms < b.end_ms;
                   });
  auto live = store_.LiveJobs();
  if (!live) return core::Error{live.error()};
  auto registry = store_.Nodes();
  if (!registry) return core::Error{registry.error()};
  // Logs of earlier runs of live jobs that ran before (read here, before the lock: a folder scan).
  std::vector<JobLogs::Held> held_logs;
  if (options_.log_quota_bytes > 0 &&
      std::any_of(live.value().begin(), live.value().end(), [](const store::JobRecord& j) {
        return j.epoch >= (j.state == store::JobState::kPending ? 1 : 2);
      })) {
    held_logs = logs_.Scan();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (const store::JobRecord& j : history) {
    const sched::RuntimePrediction before = predictor_.Predict(TraitsOf(j));
    LearnRuntimeLocked(j, static_cast<double>(j.end_ms - j.start_ms) / 1000.0,
                       predictor_.observed() > 0 ? &before : nullptr);  // the prior is no score
    if (!options_.workload_profile) workload_.Observe(ShapeOf(j), j.gpu_type);
  }
  if (!options_.workload_profile && workload_.Refresh()) {
    placement_policy_->Prepare(workload_.profile());
  }
  // Nodes registered before the restart: known sizes (submits are checked against them), one
  // lease to come back. Retired ones are gone for good (their instance deleted, their
  // credentials revoked) and are left out: a registry index is never reused within a run, so a
  // restart is where a fleet that scales up and down sheds them.
  for (const store::NodeRecord& record : registry.value()) {
    if (record.state != "RETIRED") nodes_.Restore(record, now_ms);
  }
  for (const store::JobRecord& job : live.value()) {
    if (job.state == store::JobState::kPending) {
      waiting_[job.id] = job;
      scheduler_.Enqueue(QueuedOf(job));
      continue;
    }
    Active a;
    a.job = job;
    a.queued = QueuedOf(job);
    bool adoptable = !job.placement.empty();
    for (std::size_t k = 0; k < job.placement.size(); ++k) {
      Rank r;
      r.node = NodeIndexLocked(job.placement[k].node);
      r.gpus = MaskOf(job.placement[k].gpus);
      r.started = job.state == store::JobState::kRunning;
      r.log_acked = logs_.Size(job.id, static_cast<int>(k));
      if (!nodes_[r.node].alive) {
        nodes_[r.node].pending_return = true;  // its lease starts now
        nodes_[r.node].last_seen_ms = now_ms;
      }
      a.ranks.push_back(r);
    }
    if (!adoptable) {
      store::JobUpdate lost;
      lost.end_ms = now_ms;
      lost.reason = job.state == store::JobState::kRunning
                        ? "its process ended while no agent watched it and left no exit record"
                        : "the controller stopped while starting it; not restarted, so that it "
                          "cannot run twice";
      // The end and, for a restartable job, its requeue in one commit: were they two, a stop
      // between them would leave the job LOST for good, never listed live again to requeue.
      const std::string why = lost.reason.value_or("");
      WriteLocked(job.id, job.state, store::JobState::kLost, std::move(lost));
      if (job.restartable) RequeueLocked(job, store::JobState::kLost, why);
      if (!FlushLocked(now_ms, nullptr, /*even_resting=*/true)) {
        writes_.clear();  // recovery starts again from the store
        return core::Error{"the store could not record the end of job " + std::to_string(job.id) +
                           (job.restartable ? " and its requeue" : "")};
      }
      continue;
    }
    if (job.state == store::JobState::kRunning && job.start_ms > 0) {
      auto stored = store_.GetJobUsage(job.id);
      if (stored && stored.value()) {
        if (auto series = advise::DecodeUsage(stored.value()->series); series) {
          a.usage.emplace(advise::UsageSeriesBuilder::Resume(job.start_ms, series.value()));
          a.usage_flushed_ms = now_ms;
        }
      }
    }
    // A victim caught in its grace period is stopped again (its timer to SIGKILL was lost).
    a.preempting = job.preempting;
    const bool stop_again = job.preempting;
    CountLiveLogLocked(a, +1);
    active_[job.id] = std::move(a);
    if (stop_again) StopRanksLocked(active_[job.id]);
  }
  // A live job's logs beyond its current run's are its earlier runs': they count against its
  // user's quota until it ends, as they did before the restart.
  for (const JobLogs::Held& h : held_logs) {
    int64_t earlier = h.bytes;
    std::string user;
    if (const auto w = waiting_.find(h.job_id); w != waiting_.end()) {
      user = w->second.user;
    } else if (const auto a = active_.find(h.job_id); a != active_.end()) {
      user = a->second.job.user;
      earlier -= LogBytesOf(a->second);
    }
    if (user.empty() || earlier <= 0) continue;
    earlier_logs_[h.job_id] = EarlierLogs{user, earlier};
    AddLiveLogLocked(user, earlier);
  }
  RebuildClusterLocked();
  return true;
}

void Controller::Start() {
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Controller::JoinLoop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  node_changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Controller::Stop() {
  JoinLoop();
  // A last try at what waits to be written, and every running job's usage series up to now (a
  // controller started again resumes them from the store); not once another controller leads.
  // A failure here stands nobody down (the process is stopping), and the usage waits no second
  // store timeout after the state changes met one.
  std::lock_guard<std::mutex> lock(mutex_);
  if (options_.may_act && !options_.may_act()) return;
  const int64_t now_ms = Now();
  stopping_ = true;
  if (FlushLocked(now_ms, nullptr, /*even_resting=*/true)) FlushUsageLocked(now_ms, /*last=*/true);
}

void Controller::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    Pass(lock, Now());
    if (stop_) break;
    // When a pass is due at once (a job ended meanwhile), wait_for returns without releasing the
    // lock: let heartbeats, cancels and Stop in between passes first.
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
    wake_.wait_for(lock, kTick, [this] { return stop_ || woken_.load(); });
    woken_ = false;
  }
}

int64_t Controller::Now() const { return options_.clock ? options_.clock() : NowMs(); }

void Controller::RunOnce(int64_t now_ms) {
  std::unique_lock<std::mutex> lock(mutex_);
  Pass(lock, now_ms);
}

std::optional<core::Error> Controller::Unrunnable(const store::JobRecord& job) const {
  if (auto allowed = core::CheckContainerAgainstPolicy(job.container, options_.containers);
      !allowed) {
    return allowed.failure();
  }
  if (job.nodes > 1 && job.gpu_milli < 1000) {
    return core::Error{"gpu_share: a multi-node job takes whole GPUs; drop --gpu-share or --nodes",
                       core::ErrorCode::kInvalid, "gpu_share"};
  }
  // Where an admin declared the queues (--queue-weight), only those (and "default") take jobs:
  // each made-up queue would get a fair share of its own, and a user could outweigh the quotas
  // by spreading their jobs over invented names.
  if (!options_.queue_weights.empty() && job.queue != "default" &&
      !options_.queue_weights.count(job.queue) &&
      !options_.queue_idle_timeout_ms.count(job.queue)) {
    std::string declared;
    for (const auto& [name, weight] : options_.queue_weights) {
      if (declared.size() > 512) {
        declared += ", ...";
        break;
      }
      declared += (declared.empty() ? "" : ", ") + name;
    }
    return core::Error{"queue: not one of this cluster's queues (default, " + declared +
                           "; an admin declares them with --queue-weight)",
                       core::ErrorCode::kInvalid, "queue"};
  }
  const sched::QueuedJob asked = sched::BuildQueuedJob(AskOf(job), sched::Estimates::kNone, {});
  std::lock_guard<std::mutex> lock(summary_mutex_);
  if (summary_.nodes.empty() && options_.growth_nodes.empty()) {
    return std::nullopt;  // no node yet: agents may still join
  }
  // The controller places a job on exactly as many nodes as it asks (no spreading); the fleet
  // grows a gang within one autoscaler group.
  // (The scheduler's growth nodes are set once, at construction: read without its lock.)
  return sched::NeverFits(asked, summary_.nodes, scheduler_.GrowthNodesFor(asked),
                          /*allow_spread=*/false, job.gpu_type);
}

int Controller::MaxUserPriority(const std::string& user) const {
  auto it = options_.user_max_priority.find(user);
  return it != options_.user_max_priority.end() ? it->second : options_.max_user_priority;
}

core::Result<int64_t> Controller::Submit(store::JobRecord job, bool within_cap) {
  if (auto why = Unrunnable(job)) return *why;
  job.state = store::JobState::kPending;
  if (job.submit_ms == 0) job.submit_ms = Now();
  // A retry of an earlier submit (same client token): its answer was lost, or its commit was
  // not confirmed and it never reached the inbox. The stored job, not this request, is what
  // may run; it goes to the inbox once more at most, and only while it is still PENDING (the
  // pass checks that again, see retried_ids_). A store that cannot say is an error, so that the
  // client retries again rather than take an id that may never be queued.
  const auto retried = [this](int64_t id) -> core::Result<int64_t> {
    auto stored = store_.GetJob(id);
    if (!stored) return stored.failure();
    if (!stored.value() || stored.value()->state != store::JobState::kPending) return id;
    {
      std::lock_guard<std::mutex> lock(inbox_mutex_);
      if (!retried_ids_.try_emplace(id, Now()).second) return id;
      inbox_.push_back(std::move(*stored.value()));
    }
    woken_ = true;
    wake_.notify_all();
    return id;
  };
  // A retry of a submit already added (its answer was lost) is that job, not one more: asked
  // only when a cap would refuse it. Nothing when it is not one.
  const auto earlier_submit = [&]() -> core::Result<std::optional<int64_t>> {
    auto earlier = store_.JobIdByClientToken(job.user, job.client_token);
    if (!earlier) return earlier.failure();
    if (!earlier.value()) return std::optional<int64_t>();
    auto id = retried(*earlier.value());
    if (!id) return id.failure();
    return std::optional<int64_t>(id.value());
  };
  std::unique_lock<std::mutex> capped(capped_submit_mutex_, std::defer_lock);
  const bool bytes_capped = within_cap && options_.max_job_bytes_per_user > 0;
  const int64_t job_bytes = bytes_capped ? store::columns::ArgsBytes(job) : 0;
  if (within_cap && (options_.max_live_jobs_per_user > 0 || bytes_capped)) {
    capped.lock();  // so that concurrent submits of one user cannot all pass the count
  }
  if (within_cap && options_.max_live_jobs_per_user > 0) {
    auto live = store_.LiveJobIdsOf(job.user);
    if (!live) return live.failure();
    if (static_cast<int64_t>(live.value().size()) >= options_.max_live_jobs_per_user) {
      auto earlier = earlier_submit();
      if (!earlier) return earlier.failure();
      if (earlier.value()) return *earlier.value();
      return core::Error{"jobs: " + job.user + " already holds " +
                             std::to_string(live.value().size()) +
                             " pending or running jobs, the most one user may (an admin sets "
                             "--max-jobs-per-user); cancel some or wait for them to end",
                         core::ErrorCode::kForbidden, "jobs"};
    }
  }
  if (bytes_capped) {
    const int64_t now_ms = Now();
    auto tally = args_bytes_.find(job.user);
    const bool over = tally == args_bytes_.end() ||
                      tally->second.bytes + job_bytes > options_.max_job_bytes_per_user;
    if (over && (tally == args_bytes_.end() || now_ms - tally->second.counted_ms >= 60000 ||
                 now_ms < tally->second.counted_ms)) {
      // Counted again in the store: ended jobs removed since no longer weigh.
      auto held = store_.JobArgsBytesOf(job.user);
      if (!held) return held.failure();
      tally = args_bytes_.insert_or_assign(job.user, ArgsBytesTally{held.value(), now_ms}).first;
    }
    if (tally->second.bytes + job_bytes > options_.max_job_bytes_per_user) {
      auto earlier = earlier_submit();
      if (!earlier) return earlier.failure();
      if (earlier.value()) return *earlier.value();
      return core::Error{
          "jobs: " + job.user + "'s jobs keep about " + std::to_string(tally->second.bytes) +
              " bytes of argv and env in the store, ended ones included, and this one adds " +
              std::to_string(job_bytes) + "; the most one user may keep is " +
              std::to_string(options_.max_job_bytes_per_user) +
              " (an admin sets --max-job-bytes-per-user; ended jobs leave the store after the "
              "admin's --job-retention, or when their owner removes them: gpufleet rm ID)",
          core::ErrorCode::kForbidden, "jobs"};
    }
  }
  // Counted before the store is asked: a commit that went through while its answer was lost
  // still weighs (too much counted is corrected by the next count in the store, too little never).
  if (bytes_capped) args_bytes_[job.user].bytes += job_bytes;
  auto added = store_.AddJob(job);  // durable before anything else sees it
  if (!added) return added.failure();
  const int64_t id = added.value().id;
  job.id = id;
  if (!added.value().added) return retried(id);
  EraseEarlierJobsLogs(id, std::max({1, job.nodes, job.gpus * std::max(1, job.nodes)}));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (events_ != nullptr) events_->JobChanged(job.id, store::JobState::kPending, job.submit_ms);
  }
  {
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    inbox_.push_back(std::move(job));
  }
  woken_ = true;
  wake_.notify_all();
  return id;
}

core::Result<bool> Controller::RemoveEndedJob(int64_t id, int64_t now_ms) {
  std::unique_lock<std::mutex> lock(mutex_);
  // Its end, and its usage series with it, recorded first: nothing of it is written after.
  if (WriteWaitsLocked(id) && !FlushLocked(now_ms)) {
    return core::Error{"the store is not recording job state changes now; retry",
                       core::ErrorCode::kUnavailable};
  }
  lock.unlock();
  auto job = store_.GetJob(id);
  if (!job) return core::Error{job.error()};
  if (!job.value()) return core::Error{"no job " + std::to_string(id), core::ErrorCode::kNotFound};
  const store::JobState state = job.value()->state;
  // (A LOST job here was not requeued, with its loss, in the writes flushed above: it stays.)
  if (!core::HasEnded(state)) {
    return core::Error{"state: job " + std::to_string(id) + " is " +
                           std::string(store::StateName(state)) +
                           "; only a SUCCEEDED, FAILED, CANCELLED or LOST job can be removed "
                           "(cancel it first)",
                       core::ErrorCode::kInvalid, "state"};
  }
  // Its last usage record, if not written yet, goes with it (nothing makes another: it ended);
  // put back if the removal fails.
  std::vector<store::JobUsageRecord> unwritten;
  {
    std::lock_guard<std::mutex> relock(mutex_);
    for (auto it = usage_writes_.begin(); it != usage_writes_.end();) {
      if (it->job_id != id) {
        ++it;
        continue;
      }
      unwritten.push_back(std::move(*it));
      it = usage_writes_.erase(it);
    }
  }
  const auto failed = [&](std::string why) -> core::Error {
    std::lock_guard<std::mutex> relock(mutex_);
    for (store::JobUsageRecord& u : unwritten) usage_writes_.push_back(std::move(u));
    return core::Error{std::move(why), core::ErrorCode::kUnavailable};
  };
  // Ended for good, so no chunk of its log comes after this. Its ranks: as many as its nodes, or
  // as its GPUs for a job spread over nodes (one whole GPU a rank at least), in any run.
  const store::JobRecord& ended = *job.value();
  const int ranks = std::max({ended.nodes, static_cast<int>(ended.placement.size()),
                              std::max(1, ended.gpus) * std::max(1, ended.nodes)});
  if (!logs_.Erase(logs_.Of(id, ranks, ended.epoch))) {
    return failed("job " + std::to_string(id) + "'s logs could not be removed; retry");
  }
  // The tally is held through the removal: a submit counting the store again in between would
  // leave the job out, and then have its bytes taken off once more.
  std::lock_guard<std::mutex> capped(capped_submit_mutex_);
  auto removed = store_.RemoveEndedJobs({id});
  if (!removed) return failed(removed.error());
  // A log sweep that scanned before the erase above may have written its "removed" note since;
  // with the record gone, a note written later is erased by the sweep itself (log_retention.cpp).
  logs_.Erase(JobLogs::Held{id, 0, {}});
  if (removed.value() > 0 && options_.max_job_bytes_per_user > 0) {
    if (auto tally = args_bytes_.find(job.value()->user); tally != args_bytes_.end()) {
      // What the store counted for it (an older row counted less than ArgsBytes would now).
      tally->second.bytes = std::max<int64_t>(0, tally->second.bytes - job.value()->args_bytes);
    }
  }
  return removed.value() > 0;
}

core::Result<store::JobState> Controller::Cancel(int64_t id, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  // The store's state decides below, so this job's changes it has not recorded yet go first: a
  // job whose requeue still waits in the buffer would read RUNNING there, and its cancel be lost.
  if (WriteWaitsLocked(id) && !FlushLocked(now_ms)) {
    return core::Error{"the store is not recording job state changes now; retry",
                       core::ErrorCode::kUnavailable};
  }
  auto job = store_.GetJob(id);
  if (!job) return core::Error{job.error()};
  if (!job.value()) return core::Error{"no job " + std::to_string(id)};
  store::JobState state = job.value()->state;
  if (state == store::JobState::kPending) {
    store::JobUpdate update;
    update.end_ms = now_ms;
    update.reason = "cancelled while waiting";
    auto r = store_.Transition(id, state, store::JobState::kCancelled, update, now_ms);
    if (!r) return core::Error{r.error()};
    if (r.value()) {
      if (events_ != nullptr) events_->JobChanged(id, store::JobState::kCancelled, now_ms);
      const bool queued = DropWaitingLocked(id);
      if (auto a = active_.find(id); a != active_.end()) {
        a->second.cancel = true;  // a start being committed: refused, or dropped if it fails
      } else if (!queued) {
        cancelled_unqueued_.try_emplace(id, now_ms);  // in the inbox, or on its way (Pass)
      }
      return store::JobState::kCancelled;
    }
    // No longer PENDING: a pass committed its start meanwhile (the pass commits with the lock
    // released). It is then in active_, about to launch: it is stopped like a running job.
    auto again = store_.GetJob(id);
    if (!again) return core::Error{again.error()};
    if (!again.value()) return core::Error{"no job " + std::to_string(id)};
    state = again.value()->state;
  }
  auto a = active_.find(id);
  if (a != active_.end()) {
    a->second.cancel = true;
    StopRanksLocked(a->second);
    woken_ = true;
    wake_.notify_all();
  }
  return state;  // running: CANCELLED once stopped; ended: nothing to do
}

net::EnvList Controller::LaunchEnvLocked(const Active& a, int rank) const {
  net::EnvList env;
  if (a.ranks.size() >= 2) {
    env = core::DistributedEnv(a.job.id, nodes_[a.ranks[0].node].address,
                               static_cast<int>(a.ranks.size()), rank,
                               std::popcount(a.ranks[rank].gpus));
  } else if (sched::IsElastic(a.queued)) {
    // An elastic job's world is its GPUs, one worker each (its launcher starts LOCAL_WORLD_SIZE
    // of them): WORLD_SIZE says how many it got this run.
    const int gpus = std::popcount(a.ranks[0].gpus);
    env = core::DistributedEnv(a.job.id, "127.0.0.1", 1, 0, gpus);
    for (auto& [name, value] : env) {
      if (name == "WORLD_SIZE") value = std::to_string(gpus);
    }
  }
  // Like torchrun's TORCHELASTIC_RESTART_COUNT: the runs before this one (preemptions, resizes,
  // requeues after a lost node); each placement bumps the epoch once. One node, no restart:
  // nothing (the runner's single-node defaults, count 0).
  if (!env.empty() || a.job.epoch > 1) {
    const int64_t restarts = std::max<int64_t>(0, a.job.epoch - 1);
    env.emplace_back("GPUFLEET_RESTART_COUNT", std::to_string(restarts));
  }
  return env;
}

void Controller::TouchNodeLocked(int node) {
  ++nodes_[node].version;
  if (nodes_[node].local && options_.on_local_node_change) options_.on_local_node_change();
  node_changed_.notify_all();  // held heartbeats wake once the lock is released
}

void Controller::StopRanksLocked(Active& a) {
  a.stopping = true;
  for (const Rank& r : a.ranks) TouchNodeLocked(r.node);  // the next reply to it says stop
}

void Controller::PlanLocked(store::JobRecord job, const std::vector<sched::Allocation>& placement) {
  Active a;
  std::string node_names;
  std::vector<int> indices;
  for (const sched::Allocation& p : placement) {
    Rank r;
    r.node = p.node;
    r.gpus = p.gpus;
    a.ranks.push_back(r);
    node_names += (node_names.empty() ? "" : ",") + nodes_[p.node].name;
    for (int g : MaskIndices(p.gpus)) indices.push_back(g);
  }
  std::vector<store::RankPlacement> ranks;
  for (const sched::Allocation& p : placement) {
    ranks.push_back({nodes_[p.node].name, MaskIndices(p.gpus)});
  }
  store::JobUpdate placed;
  placed.placement = ranks;
  placed.bump_epoch = true;
  WriteLocked(job.id, store::JobState::kPending, store::JobState::kScheduled, std::move(placed));
  job.state = store::JobState::kScheduled;
  job.node = node_names;
  job.gpu_indices = indices;
  job.placement = std::move(ranks);
  job.epoch += 1;
  a.job = std::move(job);
  a.queued = QueuedOf(a.job);
  a.committing = true;
  for (Rank& r : a.ranks) {
    cluster_.Allocate(r.node, RankSlice(a.queued, r.gpus), r.gpus);
    r.held = true;
  }
  active_[a.job.id] = std::move(a);
}

void Controller::UnplanLocked(int64_t id) {
  auto it = active_.find(id);
  if (it == active_.end()) return;
  Active a = std::move(it->second);
  active_.erase(it);
  CountLiveLogLocked(a);
  for (const Rank& r : a.ranks) {
    if (!r.held) continue;  // its node was lost meanwhile: the blocker holds its GPUs
    cluster_.Release(r.node, RankSlice(a.queued, r.gpus), r.gpus);
    HoldDrainedLocked(r.node);  // a GPU drained meanwhile is held, not placed on again
  }
  a.job.state = store::JobState::kPending;
  a.job.epoch -= 1;
  a.job.node.clear();
  a.job.gpu_indices.clear();
  scheduler_.Enqueue(QueuedOf(a.job));
  waiting_[id] = std::move(a.job);
}

bool Controller::DropWaitingLocked(int64_t id) {
  ForgetEarlierLogsLocked(id);  // it will not run again
  scheduler_.Remove(id);
  const bool queued = waiting_.erase(id) > 0;
  requeued_at_s_.erase(id);
  predictions_.erase(id);
  return queued;
}

void Controller::EraseEarlierJobsLogs(int64_t id, int ranks) const {
  JobLogs::Held stale = logs_.Of(id, ranks, 1);
  if (!stale.files.empty()) {
    // Found one: the earlier job may have had more ranks, and runs before a requeue. The folder
    // is read whole for them, only then.
    for (JobLogs::Held& held : logs_.Scan()) {
      if (held.job_id == id) stale = std::move(held);
    }
    std::fprintf(stderr,
                 "gpufleet controller: job %lld: removed %zu log file(s) of an earlier job of the "
                 "same id (was this data dir kept when the store was made anew?)\n",
                 static_cast<long long>(id), stale.files.size());
  }
  logs_.Erase(stale);  // and any removal note of that job
}

void Controller::LaunchLocked(int64_t id) {
  Active& a = active_.at(id);
  a.committing = false;
  const int ranks = static_cast<int>(a.ranks.size());
  // Again at the first run: a standby that took over may hold such a log of its own.
  if (a.job.epoch <= 1) EraseEarlierJobsLogs(id, ranks);
  // A new placement's logs start afresh; an earlier attempt's are kept beside them.
  logs_.KeepEarlierAttempt(id, ranks, a.job.epoch);
  for (const Rank& r : a.ranks) TouchNodeLocked(r.node);  // its agent learns of it now
  ++stats_.started;
}

void Controller::WriteLocked(int64_t id, store::JobState from, store::JobState to,
                             store::JobUpdate update) {
  writes_.push_back(store::TransitionRequest{id, from, to, std::move(update)});
}

bool Controller::FlushLocked(int64_t now_ms, std::vector<int64_t>* refused, bool even_resting) {
  if (writes_.empty()) return true;
  if (!even_resting && StoreRestingLocked(now_ms)) return false;
  std::vector<store::TransitionRequest> writes = std::move(writes_);
  writes_.clear();
  const auto done = store_.TransitionAll(writes, now_ms);
  NoteStoreLocked(done.ok() || done.failure().code != core::ErrorCode::kUnavailable);
  if (CommittedLocked(writes, done, now_ms, refused)) return true;
  // Memory already holds these changes (a job ended, say, and left active_): dropped, the store
  // would keep the job RUNNING for good, since nothing reports that end again. When the store
  // may take them later (busy, locked, full: kUnavailable) they wait, in order and ahead of any
  // later write, for the next flush. A caller that undoes its own changes instead forgets their
  // writes (ForgetMarksLocked). A batch refused as invalid would be refused again: dropped.
  if (done.failure().code == core::ErrorCode::kUnavailable) writes_ = std::move(writes);
  return false;
}

void Controller::NoteStoreLocked(bool answered) {
  if (answered) {
    store_retry_pause_ms_ = 0;
    store_retry_at_ms_ = 0;
    return;
  }
  store_retry_pause_ms_ = std::clamp<int64_t>(2 * store_retry_pause_ms_, 250, kMaxStorePauseMs);
  store_retry_at_ms_ = Now() + store_retry_pause_ms_;
}

bool Controller::StoreRestingLocked(int64_t now_ms) const {
  // A pause that seems longer than it was set for means the wall clock stepped back: it is over.
  return now_ms < store_retry_at_ms_ && store_retry_at_ms_ - now_ms <= store_retry_pause_ms_;
}

bool Controller::WriteWaitsLocked(int64_t id) const {
  return std::any_of(writes_.begin(), writes_.end(),
                     [id](const store::TransitionRequest& w) { return w.id == id; });
}

bool Controller::UnrecordedLocked(const net::Heartbeat& beat) const {
  return std::any_of(beat.jobs.begin(), beat.jobs.end(),
                     [this](const net::ReportedJob& rep) { return WriteWaitsLocked(rep.id); });
}

void Controller::ForgetMarksLocked(const std::vector<int64_t>& ids) {
  std::erase_if(writes_, [&ids](const store::TransitionRequest& w) {
    return w.from == w.to && std::find(ids.begin(), ids.end(), w.id) != ids.end();
  });
}

bool Controller::CommittedLocked(const std::vector<store::TransitionRequest>& writes,
                                 const core::Result<std::vector<bool>>& done, int64_t now_ms,
                                 std::vector<int64_t>* refused) {
  if (done) {
    for (std::size_t k = 0; k < writes.size(); ++k) {
      if (!done.value()[k]) {
        ++stats_.writes_refused;
        if (refused != nullptr) {
          refused->push_back(writes[k].id);
        } else {  // the store's row moved on meanwhile (a cancel, say, or another controller)
          std::fprintf(stderr,
                       "gpufleet: job %lld: the store refused %s -> %s (its row was no longer %s); "
                       "the store's state stands\n",
                       static_cast<long long>(writes[k].id),
                       std::string(store::StateName(writes[k].from)).c_str(),
                       std::string(store::StateName(writes[k].to)).c_str(),
                       std::string(store::StateName(writes[k].from)).c_str());
        }
      } else if (events_ != nullptr) {
        events_->JobChanged(writes[k].id, writes[k].to, now_ms);
      }
    }
  }
  if (!done) {
    ++stats_.store_errors;
    std::fprintf(stderr, "gpufleet: the store could not record job state changes: %s\n",
                 done.error().c_str());
    if (options_.on_store_write_failed && !stopping_) options_.on_store_write_failed(done.error());
    return false;
  }
  return true;
}

void Controller::SettleLocked(int64_t id, int64_t now_ms) {
  auto it = active_.find(id);
  if (it == active_.end()) return;
  Active& a = it->second;
  std::vector<RankStanding> ranks;
  for (const Rank& r : a.ranks) {
    RankStanding s;
    s.node = nodes_[r.node].name;
    s.started = r.started;
    s.ended = r.ended;
    s.lost = r.lost;
    s.stopped = r.stopped;
    s.exit_code = r.exit_code;
    s.reason = r.reason;
    s.oom_kills = std::max<int64_t>(0, r.host_usage.get(core::UsageFigure::kOomKills));
    // (A log cut at its user's quota is not waited for: the rest stays on the node.)
    s.log_in_flight =
        !r.log_held_back && r.log_acked < r.log_total && now_ms - r.ended_ms < kLogDrainMs;
    ranks.push_back(std::move(s));
  }
  JobStanding job;
  job.running = a.job.state == store::JobState::kRunning;
  job.cancel = a.cancel;
  job.stopping = a.stopping;
  job.preempting = a.preempting;
  job.timed_out = a.timed_out;
  job.restartable = a.job.restartable;
  job.health_stop = a.health_stop;
  job.idle_stop = a.idle_stop;
  job.time_limit_s = a.job.time_limit_s;
  job.memory_mib = a.job.memory_mib;
  job.queue_policy = options_.queue_policy;
  job.resizing = a.resizing;
  const Settlement next = Settle(ranks, job);
  if (next.now_running && a.job.state == store::JobState::kScheduled) {
    store::JobUpdate running;
    running.start_ms = now_ms;
    running.pid = a.ranks[0].pid;
    running.pid_start = a.ranks[0].pid_start;
    a.job.state = store::JobState::kRunning;
    a.job.start_ms = now_ms;
    a.job.pid = running.pid.value();
    a.job.pid_start = running.pid_start;
    WriteLocked(id, store::JobState::kScheduled, store::JobState::kRunning, std::move(running));
    NoteSimulatedContainerLocked(a, now_ms);
  }
  if (next.stop_the_rest) StopRanksLocked(a);
  if (!next.end) return;
  if (*next.end == store::JobState::kPreempted) {
    // It waits again, with the GPU time it has had counted as service received.
    const int64_t ran_ms = a.job.state == store::JobState::kRunning && a.job.start_ms > 0
                               ? std::max<int64_t>(0, now_ms - a.job.start_ms)
                               : 0;
    // What it held (an elastic job's may be fewer than it asks).
    a.job.attained_gpu_s +=
        static_cast<double>(HeldGpus(a)) * static_cast<double>(ran_ms) / 1000.0;
    requeued_at_s_[id] = now_ms / 1000;
  }
  EndLocked(id, *next.end, next.exit_code, next.reason, now_ms);
}

void Controller::NoteSimulatedContainerLocked(const Active& a, int64_t now_ms) {
  if (a.job.container.empty()) return;
  std::string simulated;
  for (const Rank& r : a.ranks) {
    if (!nodes_[r.node].simulated) continue;
    const std::string& name = nodes_[r.node].name;
    if (simulated.find(name) == std::string::npos) simulated += (simulated.empty() ? "" : ", ") + name;
  }
  if (simulated.empty()) return;
  const std::string detail = "no GPU devices are passed into its container on " + simulated +
                             " (simulated GPUs: no NVIDIA driver); CUDA_VISIBLE_DEVICES still "
                             "names its GPUs";
  if (auto r = store_.Audit(a.job.id, "", "container", detail, now_ms); !r) ++stats_.store_errors;
}

int64_t Controller::FigureTimeMs(const net::GpuFigure& f, int64_t now_ms) {
  // A node's clock may be off a little; a time far from the controller's is not believed (in
  // the GPU history, one in the far future kept every later sample of that GPU out).
  constexpr int64_t kMaxSkewMs = 10 * 60'000;
  return f.sample_ms > now_ms - kMaxSkewMs && f.sample_ms < now_ms + kMaxSkewMs ? f.sample_ms
                                                                                : now_ms;
}

bool Controller::AllRanksHeld(const Active& a) {
  return std::all_of(a.ranks.begin(), a.ranks.end(), [](const Rank& r) { return r.held; });
}

void Controller::EndLocked(int64_t id, store::JobState to, std::optional<int> exit_code,
                           std::string reason, int64_t now_ms) {
  Active a = std::move(active_.at(id));
  active_.erase(id);
  const bool requeue =
      (to == store::JobState::kLost && a.job.restartable) || to == store::JobState::kPreempted;
  if (requeue) {
    KeepEarlierLogsLocked(a);
  } else {
    CountLiveLogLocked(a);
    ForgetEarlierLogsLocked(id);
  }
  log_held_back_.erase(id);
  for (std::size_t k = 0; k < a.ranks.size(); ++k) {
    const Rank& r = a.ranks[k];
    if (!r.log_held_back || r.log_total <= r.log_acked) continue;
    // Said in the job's history (`gpufleet show`): the log stops because of the quota, not the
    // job. (Not in the log itself: its size is the agent's offset after a controller restart.)
    const std::string detail = "rank " + std::to_string(k) + ": the last " +
                               std::to_string(r.log_total - r.log_acked) +
                               " bytes of its log were not kept: " + a.job.user +
                               "'s running jobs' logs had reached the controller's --log-quota";
    if (auto w = store_.Audit(id, "", "log cut", detail, now_ms); !w) ++stats_.store_errors;
  }
  for (const Rank& r : a.ranks) {
    TouchNodeLocked(r.node);
    if (nodes_[r.node].alive) {
      // (A rank its node came back too small for was never taken: nothing to give back.)
      if (r.held) cluster_.Release(r.node, RankSlice(a.queued, r.gpus), r.gpus);
      HoldDrainedLocked(r.node);  // a drained GPU it leaves is held, not placed on
    }
  }
  store::JobState from = a.job.state;
  if (from == store::JobState::kScheduled && to == store::JobState::kSucceeded) {
    // Ended before every rank was seen running: record that it ran.
    store::JobUpdate running;
    running.start_ms = now_ms;
    WriteLocked(id, from, store::JobState::kRunning, std::move(running));
    from = store::JobState::kRunning;
  }
  const std::string done_reason = reason;
  store::JobUpdate done;
  done.end_ms = now_ms;
  done.exit_code = exit_code;
  int64_t samples = 0;
  double util = 0;
  int64_t peak = 0;
  for (const Rank& r : a.ranks) {
    samples += r.gpu_samples;
    util += r.util_sum;
    peak = std::max(peak, r.mem_peak_mib);
  }
  if (samples > 0) {
    done.usage_samples = samples;
    done.gpu_util_avg_pct = util / static_cast<double>(samples);
    done.gpu_mem_peak_mib = peak;
  }
  core::HostUsage host;
  for (const Rank& r : a.ranks) host = core::CombineRanks(host, r.host_usage);
  if (host.measured()) done.host_usage = host;
  done.reason = std::move(reason);
  if (to == store::JobState::kPreempted) {
    done.attained_gpu_s = a.job.attained_gpu_s;
    done.preempting = false;
  }
  if (a.usage) {
    usage_writes_.push_back(UsageRecordLocked(a, now_ms, /*ended=*/true));
    stats_.gpu_h_allocated += usage_writes_.back().gpu_h_alloc;
    stats_.gpu_h_used += usage_writes_.back().gpu_h_used;
  }
  WriteLocked(id, from, to, std::move(done));
  ++stats_.finished;
  if (to == store::JobState::kSucceeded && a.job.start_ms > 0) {
    auto made = predictions_.find(id);
    const bool scored = made != predictions_.end() && made->second.samples > 0;  // not the prior
    LearnRuntimeLocked(a.job, static_cast<double>(now_ms - a.job.start_ms) / 1000.0,
                       scored ? &made->second : nullptr);
  }
  if (requeue) {
    RequeueLocked(a.job, to, done_reason);
  } else {
    requeued_at_s_.erase(id);
    predictions_.erase(id);
  }
  woken_ = true;  // resources freed
}

void Controller::RequeueLocked(const store::JobRecord& job, store::JobState from,
                               const std::string& why) {
  store::JobUpdate again;
  again.placement = std::vector<store::RankPlacement>{};
  again.pid = 0;
  // Not started, not ended: a job cancelled or failed before its next run must not take its
  // last run's times onto GPUs it never ran on (its GPU history would show another job's use).
  again.start_ms = 0;
  again.end_ms = 0;
  again.reason = "requeued: " + why;
  WriteLocked(job.id, from, store::JobState::kPending, std::move(again));
  store::JobRecord queued = job;  // its epoch stays: the next placement bumps it
  queued.state = store::JobState::kPending;
  queued.node.clear();
  queued.gpu_indices.clear();
  queued.placement.clear();
  queued.pid = 0;
  queued.start_ms = 0;  // the next run's start is set when it runs
  queued.reason = "requeued: " + why;
  scheduler_.Enqueue(QueuedOf(queued));
  waiting_[job.id] = std::move(queued);
}

namespace {

// SM below this in every sample of a job's GPUs counts as idle for the idle reclaim.
constexpr double kIdleSmPct = 2;
// Running jobs whose series are written in one pass, at most (the rest wait for the next).
constexpr std::size_t kUsageFlushesPerPass = 256;

advise::GpuReading ReadingOf(const net::GpuFigure& f, int64_t job_id, bool shared) {
  advise::GpuReading r;
  r.index = f.index;
  r.sm_pct = f.util_pct;
  // On a shared GPU, the job's own processes' SM where the node reads per-process utilization
  // (some job's figure is there): none of its own listed means idle, unless the list is full
  // (other processes, perhaps made to look like jobs', may have pushed it out). Where no job's
  // figure is there (unsupported, or nothing ran), or the list is full without it, the device's
  // SM stands in: never less than the job's.
  if (shared && !f.job_sm.empty()) {
    const bool full = f.job_sm.size() >= net::GpuFigure::kMaxJobsPerFigure;
    if (!full) r.own_sm_pct = 0;
    for (const auto& [id, sm] : f.job_sm) {
      if (id == job_id) r.own_sm_pct = sm;
    }
  }
  r.membw_pct = f.membw_pct;
  r.mem_used_mib = f.mem_used_mib;
  r.mem_total_mib = f.mem_total_mib;
  r.pcie_mb_s = f.pcie_mb_s;
  r.power_w = f.power_w;
  r.power_limit_w = f.power_limit_w;
  r.has_reasons = f.clock_reasons >= 0;
  r.clock_event_reasons = r.has_reasons ? static_cast<uint64_t>(f.clock_reasons) : 0;
  return r;
}

}  // namespace

advise::UsageSeriesBuilder* Controller::UsageOfLocked(Active& a) {
  if (a.job.state != store::JobState::kRunning || a.job.start_ms <= 0) return nullptr;
  if (!a.usage) {
    // What its CPU and memory figures are measured against: its limits, else its first node's.
    int64_t cpu = a.job.cpu_milli, mem = a.job.memory_mib;
    if (!a.ranks.empty()) {
      const core::NodeSpec& spec = nodes_[a.ranks[0].node].spec;
      if (cpu <= 0 && spec.cpu_milli < core::kUnreportedCpuMilli) cpu = spec.cpu_milli;
      if (mem <= 0 && spec.memory_mib < core::kUnreportedMemoryMib) mem = spec.memory_mib;
    }
    a.usage.emplace(a.job.start_ms, cpu, mem);
  }
  return &*a.usage;
}

void Controller::AccountUsageLocked(int node, const std::vector<net::GpuFigure>& figures,
                                    int64_t now_ms) {
  int64_t newest = 0;
  // (Each figure's own time, as sent: it tells a sample already counted from a new one.)
  for (const net::GpuFigure& f : figures) newest = std::max(newest, f.sample_ms);
  if (newest <= nodes_[node].last_figure_ms) return;  // already counted (or none)
  nodes_[node].last_figure_ms = newest;
  for (auto& [id, a] : active_) {
    for (Rank& r : a.ranks) {
      if (r.node != node || !r.started || r.ended) continue;
      advise::UsageSeriesBuilder* series = UsageOfLocked(a);
      const bool shared = a.job.gpu_milli < 1000;
      int64_t mem = 0;
      bool measured = false, busy = false;
      for (const net::GpuFigure& f : figures) {
        if (f.index < 0 || f.index >= 32 || !(r.gpus & (1u << f.index))) continue;
        if (f.util_pct >= 0) {
          r.util_sum += f.util_pct;
          ++r.gpu_samples;
        }
        if (f.mem_used_mib > 0) mem += f.mem_used_mib;
        const advise::GpuReading reading = ReadingOf(f, id, shared);
        const double sm = reading.own_sm_pct >= 0 ? reading.own_sm_pct : reading.sm_pct;
        if (sm >= 0) {
          measured = true;
          if (sm >= kIdleSmPct) busy = true;
        }
        // Sample times are the controller's: agents' clocks may differ from it.
        if (series != nullptr) series->AddGpu(nodes_[node].name, reading, now_ms);
      }
      r.mem_peak_mib = std::max(r.mem_peak_mib, mem);
      if (busy) {
        a.idle_since_ms = 0;
        a.idle_warned = false;
      } else if (measured && a.idle_since_ms == 0 && a.job.state == store::JobState::kRunning) {
        a.idle_since_ms = now_ms;
      }
    }
  }
}

std::pair<double, double> Controller::GpuHoursLocked(const Active& a, int64_t now_ms) const {
  const double hours = static_cast<double>(std::max<int64_t>(0, now_ms - a.job.start_ms)) / 3.6e6;
  const int gpus = HeldGpus(a);  // an elastic job's may be fewer than it asks
  const double alloc = hours * gpus * a.job.GpuShare();
  int64_t samples = 0;
  double sm = 0;
  for (const advise::GpuTotal& g : a.usage->gpu_totals()) {
    samples += g.samples;
    sm += g.sm_sum;
  }
  // The job's own SM is of the whole GPU: a half-share job at 50% used all of its half.
  const double used =
      samples > 0 ? std::min(alloc, hours * gpus * sm / static_cast<double>(samples) / 100) : 0.0;
  return {alloc, used};
}

store::JobUsageRecord Controller::UsageRecordLocked(Active& a, int64_t now_ms, bool ended) {
  store::JobUsageRecord record;
  record.job_id = a.job.id;
  record.updated_ms = now_ms;
  const advise::JobUsage usage = a.usage->Snapshot();
  record.series = advise::EncodeUsage(usage);
  if (!a.ranks.empty()) record.gpu_model = nodes_[a.ranks[0].node].model_name;
  const int gpus = HeldGpus(a);  // an elastic job's may be fewer than it asks
  const double share = a.job.GpuShare();
  std::tie(record.gpu_h_alloc, record.gpu_h_used) = GpuHoursLocked(a, now_ms);
  if (ended) {
    advise::JobFacts facts;
    facts.gpus = gpus;
    facts.gpu_share = share;
    facts.nodes = static_cast<int>(a.ranks.size());
    facts.cpu_milli = a.job.cpu_milli;
    facts.memory_mib = a.job.memory_mib;
    facts.gpu_model = record.gpu_model;
    facts.run_ms = now_ms - a.job.start_ms;
    facts.ended = true;
    std::string findings;
    for (const advise::Finding& f : advise::Advise(usage, facts)) {
      char waste[32];
      std::snprintf(waste, sizeof waste, "%.3f", f.waste_gpu_h);
      findings += (findings.empty() ? "" : ",") + std::string(advise::FindingKindName(f.kind)) +
                  ":" + std::string(advise::SeverityName(f.severity)) + ":" + waste;
    }
    record.findings = findings;
  }
  return record;
}

void Controller::FlushUsageLocked(int64_t now_ms, bool last) {
  if (!last && StoreRestingLocked(now_ms)) return;  // the records wait
  std::vector<store::JobUsageRecord> records = std::move(usage_writes_);
  usage_writes_.clear();
  const std::size_t ended = records.size();  // ended jobs' last records, never made again
  for (auto& [id, a] : active_) {
    if (!last && records.size() >= kUsageFlushesPerPass) break;
    if (!a.usage || (!last && now_ms - a.usage_flushed_ms < options_.usage_flush_ms)) continue;
    a.usage_flushed_ms = now_ms;
    records.push_back(UsageRecordLocked(a, now_ms, /*ended=*/false));
  }
  if (records.empty()) return;
  auto r = store_.PutJobUsage(records);
  NoteStoreLocked(r.ok() || r.failure().code != core::ErrorCode::kUnavailable);
  if (!r) {
    ++stats_.store_errors;
    std::fprintf(stderr, "gpufleet: cannot record usage series: %s\n", r.error().c_str());
    if (!last && r.failure().code == core::ErrorCode::kUnavailable) {  // ended ones wait, as above
      records.resize(ended);
      usage_writes_ = std::move(records);
    }
  }
}

core::Result<std::optional<Controller::JobUsageView>> Controller::Usage(
    const store::JobRecord& job) {
  JobUsageView view;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = active_.find(job.id);
    if (it != active_.end() && it->second.usage) {
      Active& a = it->second;
      const int64_t now_ms = Now();
      // One copy of the series, nothing encoded: this runs under the lock that heartbeats take.
      view.usage = a.usage->Snapshot();
      view.live = true;
      std::tie(view.gpu_h_alloc, view.gpu_h_used) = GpuHoursLocked(a, now_ms);
      view.facts.gpus = HeldGpus(a);
      view.facts.gpu_share = a.job.GpuShare();
      view.facts.nodes = static_cast<int>(a.ranks.size());
      if (!a.ranks.empty()) view.facts.gpu_model = nodes_[a.ranks[0].node].model_name;
      view.facts.run_ms = now_ms - a.job.start_ms;
    }
  }
  if (!view.live) {
    auto stored = store_.GetJobUsage(job.id);
    if (!stored) return core::Error{stored.error(), core::ErrorCode::kUnavailable};
    if (!stored.value()) return std::optional<JobUsageView>();
    auto series = advise::DecodeUsage(stored.value()->series);
    if (!series) return core::Error{"job " + std::to_string(job.id) + ": " + series.error()};
    view.usage = std::move(series).value();
    view.gpu_h_alloc = stored.value()->gpu_h_alloc;
    view.gpu_h_used = stored.value()->gpu_h_used;
    view.facts.gpu_model = stored.value()->gpu_model;
    int gpus = 0;
    for (const store::RankPlacement& r : job.placement) gpus += static_cast<int>(r.gpus.size());
    view.facts.gpus = gpus > 0 ? gpus : job.gpus * std::max(1, job.nodes);
    view.facts.gpu_share = job.GpuShare();
    view.facts.nodes = std::max<int>(1, static_cast<int>(job.placement.size()));
    const int64_t end = job.end_ms > 0 ? job.end_ms : stored.value()->updated_ms;
    view.facts.run_ms = job.start_ms > 0 ? std::max<int64_t>(0, end - job.start_ms) : 0;
    view.facts.ended = job.end_ms > 0;
  }
  view.facts.cpu_milli = job.cpu_milli;
  view.facts.memory_mib = job.memory_mib;
  return std::optional<JobUsageView>(std::move(view));
}

int64_t Controller::IdleTimeoutMs(const store::JobRecord& job) const {
  auto it = options_.queue_idle_timeout_ms.find(job.queue);
  return it != options_.queue_idle_timeout_ms.end() ? it->second : options_.idle_timeout_ms;
}

void Controller::ReclaimIdleLocked(int64_t now_ms) {
  if (options_.idle_timeout_ms <= 0 && options_.queue_idle_timeout_ms.empty()) return;
  std::vector<std::pair<int64_t, std::string>> events;
  for (auto& [id, a] : active_) {
    if (a.stopping || a.idle_since_ms <= 0 || a.job.state != store::JobState::kRunning) continue;
    const int64_t timeout = IdleTimeoutMs(a.job);
    if (timeout <= 0) continue;
    const int64_t idle_ms = now_ms - a.idle_since_ms;
    if (idle_ms >= timeout) {
      a.idle_stop = "idle for " + core::DurationText(timeout) + " (every GPU below " +
                    std::to_string(static_cast<int>(kIdleSmPct)) + "% SM; the idle timeout)";
      ++stats_.idle_reclaims;
      events.emplace_back(id, "idle reclaim");
      StopRanksLocked(a);
    } else if (!a.idle_warned && idle_ms >= timeout / 5 * 4) {
      a.idle_warned = true;
      ++stats_.idle_warnings;
      events.emplace_back(id, "idle warning");
    }
  }
  for (const auto& [id, what] : events) {
    const Active& a = active_.at(id);
    const std::string detail =
        what == "idle reclaim"
            ? a.idle_stop
            : "its GPUs have been idle for " + core::DurationText(now_ms - a.idle_since_ms) +
                  "; it is stopped after " + core::DurationText(IdleTimeoutMs(a.job)) + " idle";
    if (auto r = store_.Audit(id, "", what, detail, now_ms); !r) ++stats_.store_errors;
  }
}

void Controller::PersistNodeLocked(int node, int64_t now_ms) {
  if (auto r = store_.PutNode(nodes_.Record(node, now_ms)); !r) {
    ++stats_.store_errors;
    std::fprintf(stderr, "gpufleet: cannot record node %s: %s\n", nodes_[node].name.c_str(),
                 r.error().c_str());
  }
}

void Controller::NodeLostLocked(int node, int64_t now_ms) {
  NodeEntry& n = nodes_[node];
  const bool was_alive = n.alive;  // an UNKNOWN node holds no allocation
  nodes_.Lose(node);
  ++stats_.nodes_lost;
  std::vector<int64_t> ids;
  for (auto& [id, a] : active_) {
    for (Rank& r : a.ranks) {
      if (r.node == node && !r.ended) {
        r.ended = r.lost = true;
        r.ended_ms = now_ms;
        r.reason = "node " + n.name + " missed its lease (no heartbeat for " +
                   std::to_string(options_.lease_ms / 1000.0).substr(0, 4) + " s)";
        ids.push_back(id);
      }
    }
  }
  // Release everything first (while the node still counts as present), then block the node.
  for (int64_t id : ids) {
    Active& a = active_.at(id);
    const std::string reason = [&] {
      for (const Rank& r : a.ranks) {
        if (r.lost) return r.reason;
      }
      return std::string("node lost");
    }();
    n.alive = was_alive;  // so that EndLocked releases this node's share too
    // The job's ranks on other nodes are fenced by their agents: it is no longer listed.
    EndLocked(id, store::JobState::kLost, std::nullopt, reason, now_ms);
    n.alive = false;
  }
  RebuildClusterLocked();
  if (n.known) PersistNodeLocked(node, now_ms);
}

core::Result<net::HeartbeatReply> Controller::Heartbeat(const net::Heartbeat& beat,
                                                        int64_t now_ms, bool in_process) {
  std::unique_lock<std::mutex> lock(mutex_);
  ++stats_.heartbeats;
  const int index = NodeIndexLocked(beat.node);
  NodeEntry& n = nodes_[index];
  if (n.local && !in_process) {
    return core::Error{
        "node: '" + beat.node + "' is the controller's own node; give the agent another --hostname",
        core::ErrorCode::kInvalid, "node"};
  }
  const bool busy = std::any_of(active_.begin(), active_.end(), [&](const auto& entry) {
    return std::any_of(entry.second.ranks.begin(), entry.second.ranks.end(),
                       [&](const Rank& r) { return r.node == index && !r.ended; });
  });
  bool rebuild = nodes_.Heard(index, beat, busy, now_ms);
  if (!(beat.gpu_links == n.links)) {
    n.links = beat.gpu_links;
    if (!rebuild && !cluster_.SetGpuLinks(index, n.links).ok()) n.links = {};
  }
  if (rebuild) {
    RebuildClusterLocked();
    PersistNodeLocked(index, now_ms);
  }

  std::vector<int64_t> touched;
  std::vector<net::LogAck> acked;  // what this beat's logs came to (settled jobs' too, below)
  std::set<std::pair<int64_t, int>> held_back_logs;  // (job, rank): over the user's log quota
  for (const net::ReportedJob& rep : beat.jobs) {
    auto it = active_.find(rep.id);
    if (it == active_.end() || it->second.job.epoch != rep.epoch || rep.rank < 0 ||
        rep.rank >= static_cast<int>(it->second.ranks.size()) ||
        it->second.ranks[rep.rank].node != index) {
      continue;  // stale: not listed in the reply, so the agent stops it
    }
    Rank& r = it->second.ranks[rep.rank];
    bool held_back = false;
    if (!rep.log_data.empty() && rep.log_from == r.log_acked) {
      const int64_t size = static_cast<int64_t>(rep.log_data.size());
      const std::string& user = it->second.job.user;
      // As much as the user's log quota has room for; the rest waits on the node.
      const int64_t take = std::min(size, LogRoomLocked(user));
      held_back = r.log_held_back = take < size;
      if (held_back) {
        held_back_logs.insert({rep.id, rep.rank});
        ++stats_.log_chunks_held_back;
        if (log_held_back_.insert(rep.id).second) {
          std::fprintf(stderr,
                       "gpufleet controller: job %lld: user %s's running jobs' logs reached their "
                       "log quota (%lld bytes); the rest waits on node %s\n",
                       static_cast<long long>(rep.id), user.c_str(),
                       static_cast<long long>(options_.log_quota_bytes), beat.node.c_str());
        }
      }
      if (take > 0 &&
          logs_.Append(rep.id, rep.rank, std::string_view(rep.log_data).substr(0, take))) {
        r.log_acked += take;
        live_log_bytes_[user] += take;
        if (events_ != nullptr && rep.rank == 0) events_->LogGrew(rep.id, r.log_acked);
      }
    }
    r.log_total = rep.log_size;
    acked.push_back({rep.id, rep.rank, r.log_acked, held_back});
    if (r.ended) continue;
    if (rep.usage.measured()) {
      r.host_usage = rep.usage;
      if (auto* series = UsageOfLocked(it->second)) series->AddHost(rep.rank, rep.usage, now_ms);
    }
    r.started = true;
    r.pid = rep.pid;
    r.pid_start = rep.pid_start;
    if (rep.state != net::ReportedJob::State::kRunning) {
      r.ended = true;
      r.ended_ms = now_ms;
      r.exit_code = rep.exit_code;
      r.lost = rep.state == net::ReportedJob::State::kLost;
      r.stopped = rep.stopped;
      // Bounded here too (the agent cuts it): it goes into another user's job record.
      r.reason = core::TruncateUtf8(rep.reason, kMaxRankReason);
    }
    touched.push_back(rep.id);
  }
  for (auto& [id, a] : active_) {
    for (const Rank& r : a.ranks) {
      if (r.node == index && r.ended) touched.push_back(id);  // waiting on its log
    }
  }
  AccountUsageLocked(index, beat.figures, now_ms);
  UpdateHealthLocked(index, beat.figures, now_ms);
  for (const net::GpuFigure& f : beat.figures) {
    gpu_history_.Add(n.name, f.index, FigureTimeMs(f, now_ms), f.util_pct,
                     static_cast<double>(f.mem_used_mib));
  }
  if (events_ != nullptr) events_->NodeReported(n.name);
  const std::size_t active_before = active_.size();
  for (int64_t id : touched) SettleLocked(id, now_ms);
  // A pass is due when a job ended here (its GPUs are free); a report of jobs running on needs
  // none, and waking one per beat kept the lock from the beat that reports a launch.
  const bool freed = active_.size() < active_before;
  // What the reply implies (an ended job no longer listed, so the agent forgets it) must be
  // durable before the agent reads it: while a change to a job this node reported waits
  // unrecorded, the agent is told to retry, and keeps reporting it. Other nodes are answered: a
  // node without replies for half a lease stops its restartable jobs.
  FlushLocked(now_ms);
  auto unrecorded = [] {
    return core::Error{"store: cannot record job states; retry", core::ErrorCode::kUnavailable};
  };
  if (UnrecordedLocked(beat)) return unrecorded();

  // Long poll: hold the reply until this node has new work (or a stop), or the wait is over.
  // Held replies are capped so that agents never take every HTTP worker, and one node's at one:
  // an agent beats one at a time, and a node sending many at once (a compromised one) must not
  // hold the workers that other nodes' beats need to keep their leases.
  const int64_t wait_ms = std::min<int64_t>(beat.wait_ms, options_.lease_ms / 4);
  if (wait_ms > 0 && held_heartbeats_ < kMaxHeldHeartbeats && nodes_[index].held_beats == 0) {
    const uint64_t seen = nodes_[index].version;
    ++held_heartbeats_;
    ++nodes_[index].held_beats;
    node_changed_.wait_for(lock, std::chrono::milliseconds(wait_ms),
                           [&] { return stop_ || nodes_[index].version != seen; });
    --nodes_[index].held_beats;
    --held_heartbeats_;
  }
  if (options_.may_act && !options_.may_act()) {
    return core::Error{"this controller no longer leads; ask the leader",
                       core::ErrorCode::kUnavailable};
  }
  if (UnrecordedLocked(beat)) return unrecorded();  // a pass ended one meanwhile, unrecorded
  const NodeEntry& node = nodes_[index];  // `n` may have moved: nodes_ can grow meanwhile
  net::HeartbeatReply reply;
  reply.node_epoch = node.epoch;
  reply.store_id = store_id_;
  reply.lease_ms = options_.lease_ms;
  for (const auto& [id, a] : active_) {
    if (a.committing) continue;  // not durable yet: it must not run
    for (std::size_t k = 0; k < a.ranks.size(); ++k) {
      const Rank& r = a.ranks[k];
      if (r.node != index) continue;
      net::Assignment x;
      x.id = id;
      x.epoch = a.job.epoch;
      x.rank = static_cast<int>(k);
      x.user = a.job.user;
      x.argv = a.job.argv;
      x.env = a.job.env;
      x.launch_env = LaunchEnvLocked(a, static_cast<int>(k));
      x.workdir = a.job.workdir;
      x.gpu_indices = MaskIndices(r.gpus);
      x.restartable = a.job.restartable;
      x.cpu_milli = a.job.cpu_milli;
      x.memory_mib = a.job.memory_mib;
      x.container = a.job.container;
      x.pull = options_.containers.pull;
      x.started = r.started;
      x.stop = a.stopping;
      x.grace_s = options_.stop_grace_s;
      reply.assignments.push_back(std::move(x));
      reply.logs.push_back({id, static_cast<int>(k), r.log_acked,
                            held_back_logs.count({id, static_cast<int>(k)}) > 0});
    }
  }
  // A job settled by this beat is listed no more; its log's last ack still goes, so that the
  // agent knows the controller holds the whole log and may delete its own copy.
  for (const net::LogAck& ack : acked) {
    if (active_.count(ack.id) == 0) reply.logs.push_back(ack);
  }
  if (freed) {
    woken_ = true;
    wake_.notify_all();
  }
  return reply;
}

void Controller::Pass(std::unique_lock<std::mutex>& lock, int64_t now_ms) {
  pass_done_.wait(lock, [this] { return !pass_running_; });
  pass_running_ = true;
  auto held_since = std::chrono::steady_clock::now();
  double held_ms = 0;
  ++stats_.passes;
  // 1. Jobs submitted since the last pass, after the ends (as in replay: a job arriving now is
  // predicted from what has finished by now).
  // At most options_.max_arrivals_per_pass of them: a burst (100,000 submits between two passes)
  // is taken in over several passes, each holding the lock for tens of milliseconds.
  std::vector<store::JobRecord> arrived;
  std::unordered_set<int64_t> retried;  // arrivals whose submit was retried (retried_ids_)
  {
    std::lock_guard<std::mutex> inbox_lock(inbox_mutex_);
    const std::size_t most = static_cast<std::size_t>(std::max(1, options_.max_arrivals_per_pass));
    if (inbox_.size() <= most) {
      arrived.swap(inbox_);
    } else {
      const auto end = inbox_.begin() + static_cast<std::ptrdiff_t>(most);
      arrived.assign(std::make_move_iterator(inbox_.begin()), std::make_move_iterator(end));
      inbox_.erase(inbox_.begin(), end);
      woken_ = true;  // the next pass takes more at once
    }
    for (const store::JobRecord& job : arrived) {
      if (retried_ids_.contains(job.id)) retried.insert(job.id);
    }
    if (now_ms - unarrived_pruned_ms_ >= 60'000 || now_ms < unarrived_pruned_ms_) {
      std::erase_if(retried_ids_,
                    [&](const auto& entry) { return now_ms - entry.second > kForgetUnarrivedMs; });
    }
  }
  if (now_ms - unarrived_pruned_ms_ >= 60'000 || now_ms < unarrived_pruned_ms_) {
    std::erase_if(cancelled_unqueued_,
                  [&](const auto& entry) { return now_ms - entry.second > kForgetUnarrivedMs; });
    unarrived_pruned_ms_ = now_ms;
  }
  for (store::JobRecord& job : arrived) {
    const bool cancelled = cancelled_unqueued_.erase(job.id) > 0;           // before it was queued
    if (waiting_.count(job.id) > 0 || active_.count(job.id) > 0) continue;  // a retried submit
    if (retried.contains(job.id)) {
      // Two entries of one job may arrive, with a cancel between them: the store decides.
      auto stored = store_.GetJob(job.id);
      if (!stored) {  // asked again at a later pass
        std::lock_guard<std::mutex> inbox_lock(inbox_mutex_);
        inbox_.push_back(std::move(job));
        continue;
      }
      if (!stored.value() || stored.value()->state != store::JobState::kPending) continue;
    } else if (cancelled) {
      continue;
    }
    scheduler_.Enqueue(QueuedOf(job));
    if (!options_.workload_profile) workload_.Observe(ShapeOf(job), job.gpu_type);
    waiting_[job.id] = std::move(job);
  }
  if (!options_.workload_profile && workload_.Refresh()) {
    placement_policy_->Prepare(workload_.profile());
  }
  // 2. Remote nodes silent past their lease; ranks still draining their logs.
  for (int n : nodes_.PastLease(now_ms, options_.lease_ms)) NodeLostLocked(n, now_ms);
  // Jobs past their time limit are stopped (SIGTERM, grace, SIGKILL) and end FAILED.
  for (auto& [id, a] : active_) {
    if (a.job.time_limit_s > 0 && !a.stopping && a.job.state == store::JobState::kRunning &&
        now_ms - a.job.start_ms >= a.job.time_limit_s * 1000) {
      a.timed_out = true;
      StopRanksLocked(a);
    }
  }
  ReclaimIdleLocked(now_ms);
  std::vector<int64_t> draining;
  for (const auto& [id, a] : active_) {
    for (const Rank& r : a.ranks) {
      if (r.ended) draining.push_back(id);
    }
  }
  for (int64_t id : draining) SettleLocked(id, now_ms);
  // Ends and requeues so far are committed before any placement is. While they cannot be (the
  // store fails), nothing is placed: a requeued job the store still holds RUNNING would have its
  // start's compare-and-set refused and be dropped from the queue.
  const bool settled = FlushLocked(now_ms);
  if (settled) FlushUsageLocked(now_ms);
  // 3. Schedule and start.
  std::vector<int64_t> placed;
  std::vector<int64_t> victims;  // marked PREEMPTING in the write buffer, signalled once committed
  if (settled && (scheduler_.waiting() > 0 || ElasticMayGrowLocked())) {
    std::vector<sched::RunningJob> running;
    running.reserve(active_.size());
    for (const auto& [id, a] : active_) {
      if (!AllRanksHeld(a)) continue;  // not a victim, shrunk or grown (Rank::held)
      sched::RunningJob r;
      r.job = a.queued;
      // A job not yet running has had no service in this run.
      r.started_s = a.job.state == store::JobState::kRunning && a.job.start_ms > 0
                        ? a.job.start_ms / 1000
                        : now_ms / 1000;
      for (const Rank& rank : a.ranks) r.placement.push_back({rank.node, rank.gpus});
      running.push_back(std::move(r));
    }
    scheduler_.PromoteStarved(now_ms / 1000);  // the starvation guard of Tiresias and LAS
    const std::vector<sched::Decision> decisions =
        scheduler_.Schedule(cluster_, running, now_ms / 1000, rng_);
    // Preemption happens in rounds: the victims a pass chose are stopped (SIGTERM, the grace
    // period, SIGKILL) and the starts that needed their GPUs wait for a later pass, after the
    // victims have ended; meanwhile no further job is preempted. Starts decided before the first
    // preemption fit the GPUs free now and go ahead.
    const bool round_in_progress = std::any_of(active_.begin(), active_.end(),
                                               [](const auto& e) { return e.second.preempting; });
    bool preempted = false;
    for (const sched::Decision& d : decisions) {
      // A resize of an elastic job is a checkpoint-restart: the job is stopped like a preempted
      // one (SIGTERM, its grace period) and queued again; the next pass places it at the most
      // GPUs that fit then (for a grow, what it held and the idle GPUs it was meant to take).
      const bool resize = d.kind == sched::Decision::Kind::kResize;
      if (d.kind == sched::Decision::Kind::kPreempt || resize) {
        if (round_in_progress) break;
        auto victim = active_.find(d.job);
        if (victim == active_.end()) continue;
        // A victim already stopping (cancelled, past its time limit) frees its GPUs soon: the
        // starts after it wait for that as well.
        preempted = true;
        if (victim->second.stopping) continue;
        // Marked in the store before it is signalled (below), so that a controller restarted
        // during the grace period still ends it PREEMPTED and queues it again.
        Active& v = victim->second;
        v.preempting = v.job.preempting = true;
        store::JobUpdate mark;
        mark.preempting = true;
        if (resize) {
          const int held = HeldGpus(v);
          const int to = sched::GpusOf(d.placement);
          // It restarts at `to` or, when more are free by then, more.
          const std::string what = std::string(to > held ? "growing" : "shrinking") + " from " +
                                   std::to_string(held) + " GPUs toward " + std::to_string(to) +
                                   " (elastic " + std::to_string(v.job.min_gpus) + ".." +
                                   std::to_string(v.job.gpus) + ")";
          mark.reason = "resizing: " + what + ", restarting from its checkpoint";
          v.resizing = "resized: " + what;
        } else {
          mark.reason =
              "preempting: stopped for a job the " + options_.queue_policy + " policy ranks higher";
        }
        WriteLocked(d.job, v.job.state, v.job.state, std::move(mark));
        victims.push_back(d.job);
        continue;
      }
      if (preempted) break;  // it counted on GPUs that are still being freed
      auto w = waiting_.find(d.job);
      if (w == waiting_.end()) continue;
      store::JobRecord job = std::move(w->second);
      scheduler_.Remove(d.job);
      waiting_.erase(w);
      placed.push_back(job.id);
      PlanLocked(std::move(job), d.placement);
    }
  }
  // The placements are durable (one commit for all) before any of them starts, so nothing runs
  // that the store does not know about; when the store cannot record them (a full disk, say),
  // the jobs stay queued and the next pass tries again. The commit runs with the lock released:
  // the planned jobs hold their GPUs meanwhile, but no agent hears of them (Active::committing),
  // and a cancel in between wins (the compare-and-set from PENDING is then refused).
  std::vector<store::TransitionRequest> starts, others;
  for (store::TransitionRequest& w : writes_) {
    const bool start = w.from == store::JobState::kPending && w.to == store::JobState::kScheduled;
    (start ? starts : others).push_back(std::move(w));
  }
  writes_ = std::move(others);
  bool committed = true;
  if (!victims.empty()) {
    committed = FlushLocked(now_ms);
    if (!committed) ForgetMarksLocked(victims);  // undone below: their marks are not retried
    for (int64_t id : victims) {
      Active& v = active_.at(id);
      if (!committed) {  // not recorded: not preempted either (the next pass decides again)
        v.preempting = v.job.preempting = false;
        v.resizing.clear();
        continue;
      }
      StopRanksLocked(v);
      ++(v.resizing.empty() ? stats_.preempted : stats_.resized);
    }
  }
  if (!starts.empty()) {
    held_ms += MsSince(held_since);
    lock.unlock();
    if (options_.start_commit_window) options_.start_commit_window(false);
    const auto commit_start = std::chrono::steady_clock::now();
    const auto done = store_.TransitionAll(starts, now_ms);
    const double commit_ms = MsSince(commit_start);
    if (options_.start_commit_window) options_.start_commit_window(true);
    lock.lock();
    held_since = std::chrono::steady_clock::now();
    std::vector<int64_t> refused;
    if (CommittedLocked(starts, done, now_ms, &refused)) {
      for (int64_t id : placed) {
        if (active_.count(id) == 0) continue;
        if (std::find(refused.begin(), refused.end(), id) == refused.end()) {
          LaunchLocked(id);
          continue;
        }
        // The store does not have it PENDING any more (cancelled meanwhile, or a stale retry of
        // its submit queued it again after it ran): it must not run, nor wait.
        UnplanLocked(id);
        DropWaitingLocked(id);
      }
    } else {
      for (int64_t id : placed) {
        const auto a = active_.find(id);
        if (a == active_.end()) continue;
        const bool cancelled = a->second.cancel;
        UnplanLocked(id);
        if (cancelled) DropWaitingLocked(id);  // cancelled during the commit: it waits no more
      }
    }
    stats_.last_start_commit_ms = commit_ms;
  }
  FlushLocked(now_ms);  // starts, ends, requeues: one commit
  for (const auto& [id, a] : active_) {  // idle time starts when the last rank on a node ends
    for (const Rank& r : a.ranks) {
      if (!r.ended) nodes_[r.node].last_busy_ms = now_ms;
    }
  }
  stats_.waiting = static_cast<int64_t>(scheduler_.waiting());
  stats_.running = static_cast<int64_t>(active_.size());
  if (!placed.empty()) stats_.last_start_pass_ms = held_ms + MsSince(held_since);
  pass_running_ = false;
  pass_done_.notify_all();
}

bool Controller::ElasticMayGrowLocked() const {
  if (cluster_.used_gpu_milli() >= cluster_.total_gpu_milli()) return false;
  for (const auto& [id, a] : active_) {
    if (!sched::IsElastic(a.queued) || a.stopping) continue;
    if (HeldGpus(a) < a.queued.total_gpus) return true;
  }
  return false;
}

std::vector<NodeView> Controller::Nodes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<NodeView> out;
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    const NodeEntry& n = nodes_[k];
    NodeView v;
    v.name = n.name;
    v.address = n.address;
    v.gpus = n.spec.num_gpus;
    v.free_gpus = n.alive ? cluster_.state(static_cast<int>(k)).full_free_gpus : 0;
    v.gpu_model = n.model_name;
    v.simulated = n.simulated;
    v.local = n.local;
    v.limits = n.limits;
    v.limits_why = n.limits_why;
    v.images = n.images;
    for (int g = 0; g < n.spec.num_gpus; ++g) {
      if (auto d = n.drains.find(g); d != n.drains.end()) {
        v.drained.push_back({g, "admin", d->second.reason, d->second.by, d->second.since_ms});
      } else if (!DrainReason(n, g).empty()) {
        v.drained.push_back({g, "health", n.unhealthy.at(g), "", 0});
      }
    }
    v.state = n.alive ? "READY" : n.pending_return ? "UNKNOWN" : n.retired ? "RETIRED" : "LOST";
    v.epoch = n.epoch;
    v.last_seen_ms = n.last_seen_ms;
    v.samples_json = n.samples_json;
    for (const auto& [id, a] : active_) {
      for (const Rank& r : a.ranks) {
        if (r.node == static_cast<int>(k) && !r.ended) ++v.running_jobs;
      }
    }
    if (n.alive && v.running_jobs == 0) v.idle_since_ms = std::max(n.alive_since_ms, n.last_busy_ms);
    v.gpus_now.resize(static_cast<std::size_t>(std::max(0, n.spec.num_gpus)));
    for (int g = 0; g < n.spec.num_gpus; ++g) {
      NodeView::GpuNow& now = v.gpus_now[static_cast<std::size_t>(g)];
      if (g < static_cast<int>(n.latest.size())) {
        now.util_pct = n.latest[g].util_pct;
        now.mem_used_mib = n.latest[g].mem_used_mib;
        now.mem_total_mib = n.latest[g].mem_total_mib;
      }
      now.healthy = n.unhealthy.find(g) == n.unhealthy.end();
    }
    for (const auto& [id, a] : active_) {
      for (const Rank& r : a.ranks) {
        if (r.node != static_cast<int>(k) || r.ended) continue;
        for (int g : MaskIndices(r.gpus)) {
          if (g < 0 || g >= static_cast<int>(v.gpus_now.size())) continue;
          v.gpus_now[static_cast<std::size_t>(g)].job = id;
          v.gpus_now[static_cast<std::size_t>(g)].job_user = a.job.user;
        }
      }
    }
    out.push_back(std::move(v));
  }
  return out;
}

ControllerStats Controller::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  ControllerStats out = stats_;
  for (const NodeEntry& n : nodes_) {
    for (int g = 0; g < n.spec.num_gpus; ++g) {
      if (n.drains.count(g) > 0) {
        ++out.gpus_drained_admin;
      } else if (!DrainReason(n, g).empty()) {
        ++out.gpus_drained_health;
      }
    }
  }
  for (const auto& [id, a] : active_) {
    if (!a.usage) continue;
    int64_t samples = 0;
    double sm = 0;
    for (const advise::GpuTotal& g : a.usage->gpu_totals()) {
      samples += g.samples;
      sm += g.sm_sum;
    }
    if (samples > 0) out.running_efficiency.push_back({id, a.job.user, sm / samples});
  }
  out.unarrived_remembered = static_cast<int64_t>(cancelled_unqueued_.size());
  std::lock_guard<std::mutex> inbox_lock(inbox_mutex_);  // taken after mutex_, as in Pass
  out.unarrived_remembered += static_cast<int64_t>(retried_ids_.size());
  return out;
}

}  // namespace gpufleet::controller

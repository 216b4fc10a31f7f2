#include "controller/controller.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <filesystem>

#include "core/gpu_catalog.h"
#include "sched/policy_registry.h"

namespace gpufleet::controller {
namespace {

constexpr auto kTick = std::chrono::milliseconds(50);

std::vector<int> GpuIndices(const std::vector<sched::Allocation>& placement) {
  std::vector<int> out;
  for (const sched::Allocation& a : placement) {
    for (int g = 0; g < 32; ++g) {
      if (a.gpus & (1u << g)) out.push_back(g);
    }
  }
  return out;
}

core::NodeSpec LocalNode(const ControllerOptions& o, std::string* model_name) {
  const core::GpuCatalog& catalog = core::GpuCatalog::Builtin();
  core::NodeSpec node;
  node.name = o.node_name;
  node.num_gpus = o.gpus;
  auto model = catalog.Find(o.gpu_model);
  if (!model) model = catalog.Find("G2");
  node.model = model.value_or(0);
  *model_name = catalog.model(node.model).name;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  node.cpu_milli = 1000 * std::max<long>(1, cpus);
  node.memory_mib = std::max<int64_t>(1024, static_cast<int64_t>(pages) * page_size / (1 << 20));
  return node;
}

}  // namespace

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

core::Result<std::unique_ptr<Controller>> Controller::Create(store::Store& store,
                                                             NodeExecutor& executor,
                                                             ControllerOptions options) {
  auto queue = sched::MakeQueuePolicy(options.queue_policy);
  if (!queue) {
    return core::Error{"unknown queue policy '" + options.queue_policy +
                       "'; known: " + sched::QueuePolicyNames()};
  }
  auto placement = sched::MakePlacementPolicy(options.placement_policy);
  if (!placement) {
    return core::Error{"unknown placement policy '" + options.placement_policy +
                       "'; known: " + sched::PlacementPolicyNames()};
  }
  return std::unique_ptr<Controller>(
      new Controller(store, executor, std::move(options), std::move(queue), std::move(placement)));
}

Controller::Controller(store::Store& store, NodeExecutor& executor, ControllerOptions options,
                       std::unique_ptr<sched::QueuePolicy> queue_policy,
                       std::unique_ptr<sched::PlacementPolicy> placement_policy)
    : store_(store),
      executor_(executor),
      options_(std::move(options)),
      queue_policy_(std::move(queue_policy)),
      placement_policy_(std::move(placement_policy)),
      cluster_({LocalNode(options_, &model_name_)}),
      scheduler_(*queue_policy_, *placement_policy_, /*allow_spread=*/false) {}

Controller::~Controller() { Stop(); }

std::string Controller::LogPath(int64_t id) const {
  return (std::filesystem::path(options_.data_dir) / "logs" / (std::to_string(id) + ".log"))
      .string();
}

sched::QueuedJob Controller::QueuedOf(const store::JobRecord& job) const {
  sched::QueuedJob q;
  q.id = job.id;
  q.total_gpus = std::max(1, job.gpus);
  q.gpu_milli = job.gpu_milli;
  if (!job.gpu_type.empty()) {
    if (auto models = core::GpuCatalog::Builtin().ParseSpec(job.gpu_type)) {
      q.gpu_models = models.value();
    }
  }
  q.submit_s = job.submit_ms / 1000;
  q.queue = job.queue;
  q.priority = job.priority;
  q.waiting_since_s = q.submit_s;
  return q;
}

core::Result<bool> Controller::Recover(int64_t now_ms) {
  auto live = store_.LiveJobs();
  if (!live) return core::Error{live.error()};
  std::lock_guard<std::mutex> lock(mutex_);
  for (const store::JobRecord& job : live.value()) {
    if (job.state == store::JobState::kPending) {
      waiting_[job.id] = job;
      scheduler_.Enqueue(QueuedOf(job));
      continue;
    }
    if (job.state == store::JobState::kRunning && job.pid > 0 &&
        executor_.Adopt(job, LogPath(job.id))) {
      sched::RunningJob r;
      r.job = QueuedOf(job);
      r.started_s = job.start_ms / 1000;
      core::GpuMask mask = 0;
      for (int g : job.gpu_indices) mask |= 1u << g;
      r.placement = {{0, mask}};
      cluster_.Allocate(0, sched::SliceSpec(r.job, std::popcount(mask)), mask);
      running_.push_back(std::move(r));
      continue;
    }
    store::JobUpdate lost;
    lost.end_ms = now_ms;
    lost.reason = job.state == store::JobState::kRunning
                      ? "its process ended while no agent watched it and left no exit record"
                      : "the controller stopped while starting it; not restarted, so that it "
                        "cannot run twice";
    auto r = store_.Transition(job.id, job.state, store::JobState::kLost, lost, now_ms);
    if (!r) return core::Error{r.error()};
  }
  return true;
}

void Controller::Start() {
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Controller::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Controller::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    PassLocked(NowMs());
    wake_.wait_for(lock, kTick, [this] { return stop_ || woken_.load(); });
    woken_ = false;
  }
}

void Controller::RunOnce(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  PassLocked(now_ms);
}

std::optional<std::pair<std::string, std::string>> Controller::Unrunnable(
    const store::JobRecord& job) const {
  if (job.nodes > 1) {
    return std::make_pair(std::string("nodes"),
                          "this controller runs one node; multi-node jobs need agents on more "
                          "machines (not supported yet)");
  }
  if (job.gpus > options_.gpus) {
    return std::make_pair(std::string("gpus"), "asks " + std::to_string(job.gpus) +
                                                   " GPUs; the node has " +
                                                   std::to_string(options_.gpus));
  }
  if (!job.gpu_type.empty()) {
    const core::GpuCatalog& catalog = core::GpuCatalog::Builtin();
    auto models = catalog.ParseSpec(job.gpu_type);
    const core::ModelId node_model = cluster_.spec(0).model;
    if (!models || !models.value().Contains(node_model)) {
      return std::make_pair(std::string("gpu_type"), "no node has " + job.gpu_type +
                                                         " GPUs (this node: " + model_name_ + ")");
    }
  }
  return std::nullopt;
}

core::Result<int64_t> Controller::Submit(store::JobRecord job) {
  if (auto why = Unrunnable(job)) return core::Error{why->first + ": " + why->second};
  job.state = store::JobState::kPending;
  if (job.submit_ms == 0) job.submit_ms = NowMs();
  auto id = store_.SubmitJob(job);  // durable before anything else sees it
  if (!id) return id;
  job.id = id.value();
  if (!job.client_token.empty()) {
    // A retry of an earlier submit (same client token): queue it only if it is still waiting to
    // be queued or scheduled for the first time; the pass skips ids it already holds.
    auto stored = store_.GetJob(job.id);
    if (!stored || !stored.value() || stored.value()->state != store::JobState::kPending) {
      return id;
    }
  }
  {
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    inbox_.push_back(std::move(job));
  }
  woken_ = true;
  wake_.notify_all();
  return id;
}

core::Result<store::JobState> Controller::Cancel(int64_t id, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto job = store_.GetJob(id);
  if (!job) return core::Error{job.error()};
  if (!job.value()) return core::Error{"no job " + std::to_string(id)};
  const store::JobState state = job.value()->state;
  if (state == store::JobState::kPending) {
    store::JobUpdate update;
    update.end_ms = now_ms;
    update.reason = "cancelled while waiting";
    auto r = store_.Transition(id, state, store::JobState::kCancelled, update, now_ms);
    if (!r) return core::Error{r.error()};
    scheduler_.Remove(id);
    waiting_.erase(id);
    return store::JobState::kCancelled;
  }
  if (state == store::JobState::kRunning || state == store::JobState::kScheduled) {
    cancel_requested_[id] = true;
    executor_.Stop(id, options_.stop_grace_s);
    woken_ = true;
    wake_.notify_all();
    return state;
  }
  return state;  // already ended: nothing to do
}

void Controller::PassLocked(int64_t now_ms) {
  ++stats_.passes;
  // 0. Jobs submitted since the last pass.
  std::vector<store::JobRecord> arrived;
  {
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    arrived.swap(inbox_);
  }
  for (store::JobRecord& job : arrived) {
    const bool held = waiting_.count(job.id) > 0 ||
                      std::any_of(running_.begin(), running_.end(),
                                  [&](const sched::RunningJob& r) { return r.job.id == job.id; });
    if (held) continue;  // a retried submit of a job already queued or running
    scheduler_.Enqueue(QueuedOf(job));
    waiting_[job.id] = std::move(job);
  }
  // 1. Jobs that ended.
  for (const NodeExecutor::Exit& exit : executor_.Poll()) {
    auto it = std::find_if(running_.begin(), running_.end(),
                           [&](const sched::RunningJob& r) { return r.job.id == exit.job_id; });
    if (it == running_.end()) continue;
    for (const sched::Allocation& a : it->placement) {
      cluster_.Release(a.node, sched::SliceSpec(it->job, std::popcount(a.gpus)), a.gpus);
    }
    running_.erase(it);
    const bool cancelled = cancel_requested_.erase(exit.job_id) > 0;
    store::JobUpdate done;
    done.end_ms = now_ms;
    done.exit_code = exit.exit_code;
    store::JobState to = store::JobState::kSucceeded;
    if (cancelled) {
      to = store::JobState::kCancelled;
      done.reason = "cancelled while running";
    } else if (exit.exit_code != 0) {
      to = store::JobState::kFailed;
      done.reason = "exit code " + std::to_string(exit.exit_code);
    }
    store_.Transition(exit.job_id, store::JobState::kRunning, to, done, now_ms);
    ++stats_.finished;
  }
  // 2. Schedule and start.
  if (scheduler_.waiting() > 0) {
    const std::vector<sched::Decision> decisions =
        scheduler_.Schedule(cluster_, running_, now_ms / 1000, rng_);
    for (const sched::Decision& d : decisions) {
      if (d.kind != sched::Decision::Kind::kStart) continue;  // no preemptive default policy yet
      auto w = waiting_.find(d.job);
      if (w == waiting_.end()) continue;
      store::JobRecord job = w->second;
      scheduler_.Remove(d.job);
      waiting_.erase(w);
      job.node = options_.node_name;
      job.gpu_indices = GpuIndices(d.placement);
      store::JobUpdate placed;
      placed.node = job.node;
      placed.gpu_indices = job.gpu_indices;
      placed.bump_epoch = true;
      auto scheduled = store_.Transition(job.id, store::JobState::kPending,
                                         store::JobState::kScheduled, placed, now_ms);
      if (!scheduled) {
        // The store cannot record the start (a full disk, say): the job stays queued, nothing
        // runs that the store does not know about, and the next pass tries again.
        waiting_[job.id] = job;
        scheduler_.Enqueue(QueuedOf(job));
        break;
      }
      if (!scheduled.value()) continue;  // cancelled meanwhile
      auto started = executor_.Start(job, LogPath(job.id));
      if (!started) {
        store::JobUpdate failed;
        failed.end_ms = now_ms;
        failed.reason = started.error();
        store_.Transition(job.id, store::JobState::kScheduled, store::JobState::kFailed, failed,
                          now_ms);
        continue;
      }
      store::JobUpdate running;
      running.start_ms = now_ms;
      running.pid = started.value().pid;
      running.pid_start = started.value().pid_start;
      store_.Transition(job.id, store::JobState::kScheduled, store::JobState::kRunning, running,
                        now_ms);
      sched::RunningJob r;
      r.job = QueuedOf(job);
      r.placement = d.placement;
      r.started_s = now_ms / 1000;
      for (const sched::Allocation& a : r.placement) {
        cluster_.Allocate(a.node, sched::SliceSpec(r.job, std::popcount(a.gpus)), a.gpus);
      }
      running_.push_back(std::move(r));
      ++stats_.started;
    }
  }
  stats_.waiting = static_cast<int64_t>(scheduler_.waiting());
  stats_.running = static_cast<int64_t>(running_.size());
}

NodeView Controller::Node() const {
  std::lock_guard<std::mutex> lock(mutex_);
  NodeView v;
  v.name = options_.node_name;
  v.gpus = options_.gpus;
  v.free_gpus = cluster_.state(0).full_free_gpus;
  v.gpu_model = model_name_;
  v.simulated = options_.simulated;
  v.running_jobs = static_cast<int>(running_.size());
  return v;
}

ControllerStats Controller::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace gpufleet::controller

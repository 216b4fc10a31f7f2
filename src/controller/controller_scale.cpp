// The Controller's side of the autoscaler (controller/autoscaler.h): the view it plans from,
// retiring idle nodes, and draining a node under a spot notice. Kept apart from controller.cpp,
// which is about jobs.
#include <algorithm>
#include <cmath>

#include "controller/controller.h"

namespace gpufleet::controller {

Controller::ScaleView Controller::ScaleSnapshot(int64_t now_ms) const {
  std::lock_guard<std::mutex> lock(mutex_);
  ScaleView view;
  view.cluster = cluster_;
  std::vector<uint8_t> busy(nodes_.size(), 0);
  for (const auto& [id, a] : active_) {
    for (const Rank& r : a.ranks) {
      if (!r.ended) busy[r.node] = 1;
    }
  }
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    const NodeEntry& n = nodes_[k];
    view.names.push_back(n.name);
    view.alive.push_back(n.alive ? 1 : 0);
    view.idle_since_ms.push_back(n.alive && !busy[k] ? std::max(n.alive_since_ms, n.last_busy_ms)
                                                     : -1);
  }
  for (const auto& [id, a] : active_) {
    if (a.stopping || a.job.state != store::JobState::kRunning) continue;
    scale::RunningJobView r;
    r.run.job = a.queued;
    r.run.started_s = a.job.start_ms / 1000;
    for (const Rank& rank : a.ranks) r.run.placement.push_back({rank.node, rank.gpus});
    r.restartable = a.job.restartable;
    if (auto p = predictions_.find(id); p != predictions_.end() && p->second.samples > 0 &&
                                              !std::isnan(p->second.seconds)) {
      const double ran_s = static_cast<double>(now_ms - a.job.start_ms) / 1000.0;
      r.expected_remaining_s = std::max(0.0, p->second.seconds - ran_s);
    }
    r.restart_overhead_s = options_.stop_grace_s + 60;
    view.running.push_back(std::move(r));
  }
  for (const auto& [id, job] : waiting_) {
    scale::WaitingJob w;
    w.job = QueuedOf(job);
    w.restartable = job.restartable;
    view.waiting.push_back(std::move(w));
  }
  return view;
}

core::Result<bool> Controller::BeginRetire(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto target = DrainTargetLocked(name, -1);
  if (!target) return target.failure();
  const int k = target.value().first;
  if (!nodes_[k].alive) return core::Error{"node " + name + " is not alive", core::ErrorCode::kInvalid, "node"};
  for (const auto& [id, a] : active_) {
    for (const Rank& r : a.ranks) {
      if (r.node == k && !r.ended) return false;  // busy: not now
    }
  }
  const int64_t now_ms = Now();
  for (int g : target.value().second) {
    nodes_[k].drains[g] = store::GpuDrain{g, "retiring: idle past the unneeded time", "autoscaler",
                                          now_ms};
  }
  PersistNodeLocked(k, now_ms);
  HoldDrainedLocked(k);
  return true;
}

void Controller::FinishRetire(const std::string& name, int64_t now_ms) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto target = DrainTargetLocked(name, -1);
    if (!target) return;
    const int k = target.value().first;
    NodeEntry& n = nodes_[k];
    const bool was_alive = n.alive;
    nodes_.Lose(k);  // a new epoch: whatever it might still run is fenced
    n.retired = true;
    n.drains.clear();
    if (was_alive) RebuildClusterLocked();
    PersistNodeLocked(k, now_ms);
  }
  // Its credential is of no use to anyone now: an instance that somehow lives on cannot return.
  (void)store_.RevokeNodeTokens(name);
}

void Controller::AbortRetire(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto target = DrainTargetLocked(name, -1);
  if (!target) return;
  const int k = target.value().first;
  for (auto it = nodes_[k].drains.begin(); it != nodes_[k].drains.end();) {
    it = it->second.by == "autoscaler" ? nodes_[k].drains.erase(it) : std::next(it);
  }
  PersistNodeLocked(k, Now());
  HoldDrainedLocked(k);
  woken_ = true;
}

core::Result<int> Controller::Evacuate(const std::string& name, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto target = DrainTargetLocked(name, -1);
  if (!target) return target.failure();
  const int k = target.value().first;
  const int64_t now_ms = Now();
  for (int g : target.value().second) {
    nodes_[k].drains[g] = store::GpuDrain{g, reason, "autoscaler", now_ms};
  }
  PersistNodeLocked(k, now_ms);
  HoldDrainedLocked(k);
  // As a preemption: marked in the store first, so that a controller restarted during the grace
  // period still ends the job PREEMPTED and queues it again.
  std::vector<int64_t> stopped;
  for (auto& [id, a] : active_) {
    if (!a.job.restartable || a.stopping) continue;
    const bool here = std::any_of(a.ranks.begin(), a.ranks.end(),
                                  [&](const Rank& r) { return r.node == k && !r.ended; });
    if (!here) continue;
    a.preempting = a.job.preempting = true;
    store::JobUpdate mark;
    mark.preempting = true;
    mark.reason = "preempting: " + reason;
    WriteLocked(id, a.job.state, a.job.state, std::move(mark));
    stopped.push_back(id);
  }
  // Tried even while the store rests after a failure: a spot node is taken within minutes, and
  // its jobs get their grace period only if this is recorded now.
  if (!stopped.empty() && !FlushLocked(now_ms, nullptr, /*even_resting=*/true)) {
    ForgetMarksLocked(stopped);  // undone here: the marks are not retried
    for (int64_t id : stopped) {
      Active& a = active_.at(id);
      a.preempting = a.job.preempting = false;
    }
    return core::Error{"the store could not record the evacuation of node " + name,
                       core::ErrorCode::kUnavailable};
  }
  for (int64_t id : stopped) {
    StopRanksLocked(active_.at(id));
    ++stats_.preempted;
  }
  woken_ = true;
  return static_cast<int>(stopped.size());
}

}  // namespace gpufleet::controller

// Controller::ExplainQueue: why each waiting job waits, from the scheduler itself (see
// sched/explain.h). Kept apart from controller.cpp, which moves jobs; this only reads.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "controller/controller.h"

namespace gpufleet::controller {

int64_t Controller::ExplanationsMade() const {
  std::lock_guard<std::mutex> one(explain_mutex_);
  return explanations_made_;
}

std::vector<int64_t> Controller::ExplainInputsLocked() const {
  std::vector<int64_t> inputs = {
      stats_.started, stats_.finished, stats_.preempted,  stats_.resized,
      stats_.waiting, stats_.running,  stats_.nodes_lost, static_cast<int64_t>(cluster_.size())};
  // Each node's standing: alive or not, and its drained GPUs (by an admin, or unhealthy).
  for (const NodeEntry& n : nodes_) {
    int64_t drained = 0;
    for (int g = 0; g < n.spec.num_gpus; ++g) {
      if (n.drains.count(g) > 0 || !DrainReason(n, g).empty()) ++drained;
    }
    inputs.push_back((n.alive ? 1 : 0) + (n.retired ? 2 : 0) + 4 * drained);
  }
  return inputs;
}

std::vector<Controller::QueueExplanation> Controller::ExplainQueue(int64_t now_ms) const {
  std::lock_guard<std::mutex> one(explain_mutex_);
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int64_t> inputs = ExplainInputsLocked();
  if (!explained_inputs_.empty() && now_ms >= explained_ms_ &&
      (now_ms - explained_ms_ < kExplainFloorMs ||
       (now_ms - explained_ms_ < kExplainReuseMs && inputs == explained_inputs_))) {
    return explained_;
  }
  const int64_t now_s = now_ms / 1000;
  std::vector<sched::ExplainRunning> running;
  std::vector<sched::RunningJob> runs;
  running.reserve(active_.size());
  for (const auto& [id, a] : active_) {
    if (!AllRanksHeld(a)) continue;  // as the pass sees it (Rank::held)
    sched::ExplainRunning r;
    r.run.job = a.queued;
    // As the pass sees it: a job not yet running has had no service in this run.
    r.run.started_s = a.job.state == store::JobState::kRunning && a.job.start_ms > 0
                          ? a.job.start_ms / 1000
                          : now_s;
    for (const Rank& rank : a.ranks) r.run.placement.push_back({rank.node, rank.gpus});
    if (a.job.time_limit_s > 0) r.time_limit_s = static_cast<double>(a.job.time_limit_s);
    // A prediction from the fixed prior says nothing about this job: no estimate.
    if (auto p = predictions_.find(id);
        p != predictions_.end() && std::strcmp(p->second.basis, "prior") != 0) {
      r.estimate_s =
          sched::RemainingEstimate(p->second.seconds, a.queued.attained_gpu_s, a.queued.total_gpus);
    }
    runs.push_back(r.run);
    running.push_back(std::move(r));
  }
  const std::vector<sched::QueuedJob> waiting = scheduler_.Waiting();
  core::Rng rng = rng_;  // a copy: explaining must not change what the next pass draws
  const std::vector<sched::Decision> decisions = scheduler_.Schedule(cluster_, runs, now_s, rng);
  sched::ExplainInput in;
  in.waiting = waiting;
  in.cluster = &cluster_;
  in.running = running;
  in.decisions = decisions;
  in.queue_policy = queue_policy_.get();
  in.placement_policy = placement_policy_.get();
  in.allow_spread = false;  // as scheduler_ is made
  in.growth_nodes = options_.growth_nodes;
  if (options_.growth_nodes_on_demand)
    in.growth_nodes_on_demand = &*options_.growth_nodes_on_demand;
  in.queue_weights = &scheduler_.queue_weights();
  in.default_queue_weight = scheduler_.default_queue_weight();
  in.now_s = now_s;
  std::vector<QueueExplanation> out;
  out.reserve(waiting.size());
  for (sched::Explanation& why : sched::ExplainQueue(in, rng)) {
    QueueExplanation e;
    if (auto w = waiting_.find(why.id); w != waiting_.end()) {
      e.user = w->second.user;
      e.name = w->second.name;
      e.queue = w->second.queue;
      e.gpus = w->second.gpus;
      e.nodes = std::max(1, w->second.nodes);
    }
    if (why.fits_after_job) {
      auto p = predictions_.find(*why.fits_after_job);
      e.fits_after_mixed = p != predictions_.end() && p->second.MixesOtherUsersJobs();
    }
    e.why = std::move(why);
    out.push_back(std::move(e));
  }
  explained_ = out;
  explained_ms_ = now_ms;
  explained_inputs_ = std::move(inputs);
  ++explanations_made_;
  return out;
}

}  // namespace gpufleet::controller

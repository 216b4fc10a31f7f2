#include "sim/sim_fleet.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "core/check.h"

namespace gpufleet::sim {

ClusterSpec FleetClusterSpec(const scale::AutoscaleConfig& config) {
  ClusterSpec spec;
  spec.name = "autoscaled";
  for (const scale::NodeGroup& g : config.groups) {
    for (int i = 0; i < g.max; ++i) {
      core::NodeSpec node;
      node.name = g.name + "-" + std::to_string(i);
      node.cpu_milli = g.cpu_milli;
      node.memory_mib = g.memory_mib;
      node.num_gpus = g.gpus;
      node.model = g.model;
      spec.nodes.push_back(std::move(node));
    }
  }
  return spec;
}

bool SimFleet::Event::operator>(const Event& o) const {
  return std::tie(time, kind, slot, generation) > std::tie(o.time, o.kind, o.slot, o.generation);
}

SimFleet::SimFleet(const scale::AutoscaleConfig& config, const AutoscaleSimOptions& options,
                   uint64_t seed)
    : config_(config), options_(options), interruptions_(seed ^ 0x5f0e7a11u) {
  GPUFLEET_CHECK(!config.groups.empty());
  free_slots_.resize(config.groups.size());
  for (size_t g = 0; g < config.groups.size(); ++g) {
    const int first = static_cast<int>(slots_.size());
    for (int i = 0; i < config.groups[g].max; ++i) {
      Slot s;
      s.group = static_cast<int>(g);
      slots_.push_back(s);
      names_.push_back(config.groups[g].name + "-" + std::to_string(i));
      slot_of_.emplace(names_.back(), static_cast<int>(slots_.size()) - 1);
    }
    // Taken from the back: the lowest-numbered free slot first.
    for (int k = static_cast<int>(slots_.size()) - 1; k >= first; --k) free_slots_[g].push_back(k);
  }
  stats_.enabled = true;
}

namespace {

// Everything node `spec` has, as one allocation: what holds a slot with no ready node in it.
std::pair<core::JobSpec, core::GpuMask> WholeNode(const core::NodeSpec& spec) {
  core::JobSpec all;
  all.cpu_milli = spec.cpu_milli;
  all.memory_mib = spec.memory_mib;
  all.num_gpu = spec.num_gpus;
  all.gpu_milli = core::kGpuMilli;
  const core::GpuMask mask =
      spec.num_gpus >= 32 ? ~core::GpuMask{0} : (core::GpuMask{1} << spec.num_gpus) - 1;
  return {all, mask};
}

}  // namespace

void SimFleet::Block(core::ClusterSnapshot& cluster, int slot) {
  const auto [all, mask] = WholeNode(cluster.spec(slot));
  cluster.Allocate(slot, all, mask);
  blocked_gpu_milli_ += all.GpuDemandMilli();
}

void SimFleet::Unblock(core::ClusterSnapshot& cluster, int slot) {
  const auto [all, mask] = WholeNode(cluster.spec(slot));
  cluster.Release(slot, all, mask);
  blocked_gpu_milli_ -= all.GpuDemandMilli();
}

void SimFleet::Start(core::ClusterSnapshot& cluster, int64_t start) {
  GPUFLEET_CHECK(cluster.size() == static_cast<int>(slots_.size()));
  for (int s = 0; s < cluster.size(); ++s) Block(cluster, s);
  for (size_t g = 0; g < config_.groups.size(); ++g) {
    for (int i = 0; i < config_.groups[g].min; ++i) {
      Create(static_cast<int>(g), false, start);
      const int slot = live_.back();
      Unblock(cluster, slot);
      slots_[slot].state = State::kReady;
      ++slots_[slot].generation;  // the boot event Create queued is void: it is ready already
    }
  }
  changed_ = true;
}

int64_t SimFleet::NextEventTime() const { return events_.empty() ? INT64_MAX : events_.top().time; }

void SimFleet::Create(int group, bool spot, int64_t now) {
  const scale::NodeGroup& g = config_.groups[group];
  GPUFLEET_CHECK(!free_slots_[group].empty());
  const int slot = free_slots_[group].back();
  free_slots_[group].pop_back();
  Slot& s = slots_[slot];
  s.state = State::kBooting;
  s.spot = spot;
  s.created_s = now;
  s.idle_since_s = -1;
  ++s.generation;
  events_.push({now + g.boot_s, EventKind::kBoot, slot, s.generation});
  if (spot && options_.spot_interruptions_per_node_hour > 0) {
    // Exponential time to the interruption; the node may be retired before it comes.
    const double u = 1.0 - interruptions_.Uniform();  // (0, 1]
    const double hours = -std::log(u) / options_.spot_interruptions_per_node_hour;
    const double at = static_cast<double>(now) + std::ceil(hours * 3600.0);
    if (at < 9.0e18) {
      events_.push({static_cast<int64_t>(at), EventKind::kInterrupt, slot, s.generation});
    }
  }
  live_.push_back(slot);
  ++stats_.nodes_created;
  stats_.spot_nodes_created += spot;
  spend_per_hour_ += g.Price(spot);
  stats_.peak_spend_per_hour = std::max(stats_.peak_spend_per_hour, spend_per_hour_);
  stats_.peak_nodes = std::max<int64_t>(stats_.peak_nodes, static_cast<int64_t>(live_.size()));
  if (!stats_.nodes_over_time.empty() && stats_.nodes_over_time.back().first == now) {
    stats_.nodes_over_time.back().second = static_cast<int>(live_.size());
  } else {
    stats_.nodes_over_time.emplace_back(now, static_cast<int>(live_.size()));
  }
}

void SimFleet::EndLifetime(int slot, int64_t now) {
  Slot& s = slots_[slot];
  const scale::NodeGroup& g = config_.groups[s.group];
  const double life = static_cast<double>(std::max<int64_t>(0, now - s.created_s));
  const double cost = life / 3600.0 * g.Price(s.spot);
  stats_.cost_usd += cost;
  if (s.spot) stats_.spot_cost_usd += cost;
  stats_.gpu_s_bought += life * g.gpus;
  spend_per_hour_ -= g.Price(s.spot);
}

void SimFleet::Remove(core::ClusterSnapshot& cluster, int slot, int64_t now) {
  Slot& s = slots_[slot];
  GPUFLEET_CHECK(s.state != State::kAbsent);
  if (s.state == State::kReady) Block(cluster, slot);
  EndLifetime(slot, now);
  s.state = State::kAbsent;
  s.idle_since_s = -1;
  ++s.generation;
  free_slots_[s.group].push_back(slot);
  live_.erase(std::find(live_.begin(), live_.end(), slot));
  changed_ = true;
  if (!stats_.nodes_over_time.empty() && stats_.nodes_over_time.back().first == now) {
    stats_.nodes_over_time.back().second = static_cast<int>(live_.size());
  } else {
    stats_.nodes_over_time.emplace_back(now, static_cast<int>(live_.size()));
  }
}

std::vector<int> SimFleet::Advance(core::ClusterSnapshot& cluster, int64_t now) {
  std::vector<int> interrupted;
  while (!events_.empty() && events_.top().time <= now) {
    const Event ev = events_.top();
    events_.pop();
    if (ev.kind == EventKind::kWake) {
      if (ev.slot < 0) {
        changed_ = true;
        continue;
      }
      const Slot& s = slots_[ev.slot];
      if (s.generation == ev.generation && s.state == State::kReady && s.idle_since_s >= 0 &&
          now - s.idle_since_s >= config_.policy.scale_down_unneeded_s) {
        idle_expired_ = true;
        changed_ = true;
      }
      continue;
    }
    Slot& s = slots_[ev.slot];
    if (s.generation != ev.generation || s.state == State::kAbsent) continue;
    if (ev.kind == EventKind::kBoot) {
      if (s.state != State::kBooting) continue;
      Unblock(cluster, ev.slot);
      s.state = State::kReady;
      changed_ = true;
    } else {
      ++stats_.interruptions;
      interrupted.push_back(ev.slot);
    }
  }
  return interrupted;
}

void SimFleet::Wake(int64_t at) {
  if (wake_at_ == at) return;
  wake_at_ = at;
  events_.push({at, EventKind::kWake, -1, 0});
}

void SimFleet::AfterSchedule(core::ClusterSnapshot& cluster,
                             const std::function<std::vector<scale::WaitingJob>()>& waiting,
                             const std::function<std::vector<scale::RunningJobView>()>& running,
                             bool any_waiting, int64_t now, const sched::PlacementPolicy& placement,
                             core::Rng& rng) {
  const int64_t unneeded = config_.policy.scale_down_unneeded_s;
  for (int slot : live_) {
    Slot& s = slots_[slot];
    if (s.state != State::kReady) continue;
    const core::NodeState& st = cluster.state(slot);
    const core::NodeSpec& spec = cluster.spec(slot);
    const bool idle = st.full_free_gpus == st.num_gpus && st.cpu_free == spec.cpu_milli &&
                      st.memory_free == spec.memory_mib;
    if (!idle) {
      s.idle_since_s = -1;
    } else if (s.idle_since_s < 0) {
      s.idle_since_s = now;
      events_.push({now + unneeded, EventKind::kWake, slot, s.generation});
    }
  }
  if (!changed_) return;
  bool below_min = false;
  for (size_t g = 0; g < config_.groups.size() && !below_min; ++g) {
    below_min =
        config_.groups[g].max - static_cast<int>(free_slots_[g].size()) < config_.groups[g].min;
  }
  const bool consolidate = config_.policy.consolidation && completed_;
  if (!any_waiting && !idle_expired_ && !below_min && !consolidate) {
    changed_ = false;  // nothing to buy or retire: no pass needed
    return;
  }
  const int64_t due = last_plan_s_ + config_.policy.scan_interval_s;
  if (now < due) {
    Wake(due);
    return;
  }
  Plan(cluster, waiting(),
       config_.policy.consolidation ? running() : std::vector<scale::RunningJobView>{}, now,
       placement, rng);
}

std::vector<scale::Plan::Consolidation> SimFleet::TakeConsolidations() {
  return std::exchange(consolidate_, {});
}

void SimFleet::Consolidated(core::ClusterSnapshot& cluster, const std::string& name, int64_t now,
                            int64_t drain_s) {
  const int slot = slot_of_.at(name);
  const Slot& s = slots_[slot];
  GPUFLEET_CHECK(s.state == State::kReady);
  const scale::NodeGroup& g = config_.groups[s.group];
  const double drain = static_cast<double>(std::max<int64_t>(0, drain_s));
  stats_.cost_usd += drain / 3600.0 * g.Price(s.spot);
  if (s.spot) stats_.spot_cost_usd += drain / 3600.0 * g.Price(s.spot);
  stats_.gpu_s_bought += drain * g.gpus;
  Remove(cluster, slot, now);
  ++stats_.nodes_retired;
  ++stats_.consolidations;
  events_.push({now, EventKind::kWake, -1, 0});
}

void SimFleet::Plan(core::ClusterSnapshot& cluster, std::vector<scale::WaitingJob> waiting,
                    std::vector<scale::RunningJobView> running, int64_t now,
                    const sched::PlacementPolicy& placement, core::Rng& rng) {
  scale::PlanInput in;
  in.groups = &config_.groups;
  in.policy = config_.policy;
  in.cluster = &cluster;
  in.now = now;
  in.nodes.reserve(live_.size());
  for (int slot : live_) {
    const Slot& s = slots_[slot];
    scale::ManagedNode n;
    n.name = names_[slot];
    n.group = s.group;
    n.spot = s.spot;
    n.ready = s.state == State::kReady;
    n.cluster_index = n.ready ? slot : -1;
    n.idle_since_s = n.ready ? s.idle_since_s : -1;
    in.nodes.push_back(std::move(n));
  }
  in.waiting = std::move(waiting);
  in.running = std::move(running);
  scale::Plan plan = scale::PlanScaling(in, placement, rng);
  ++stats_.planner_calls;
  last_plan_s_ = now;
  changed_ = false;
  idle_expired_ = false;
  completed_ = false;
  consolidate_ = std::move(plan.consolidate);
  for (const scale::CreateOrder& o : plan.create) {
    for (int k = 0; k < o.count; ++k) Create(o.group, o.spot, now);
  }
  for (const std::string& name : plan.retire) {
    const int slot = slot_of_.at(name);
    Remove(cluster, slot, now);
    ++stats_.nodes_retired;
  }
  changed_ = false;
  // Time alone changes what the planner would do for a waiting job once it passes its
  // scale-up delay or its spot fallback: wake up then.
  bool any_spot = false;
  for (const scale::NodeGroup& g : config_.groups) any_spot = any_spot || g.HasSpot();
  int64_t next = INT64_MAX;
  for (const scale::WaitingJob& w : in.waiting) {
    const int64_t since = w.job.waiting_since_s;
    if (since + config_.policy.scale_up_delay_s > now) {
      next = std::min(next, since + config_.policy.scale_up_delay_s);
    }
    if (any_spot && w.restartable && since + config_.policy.spot_fallback_s > now) {
      next = std::min(next, since + config_.policy.spot_fallback_s);
    }
  }
  if (next != INT64_MAX) Wake(std::max(next, now + config_.policy.scan_interval_s));
}

FleetStats SimFleet::Finish(int64_t end) {
  for (int slot : live_) EndLifetime(slot, end);
  live_.clear();
  return stats_;
}

}  // namespace gpufleet::sim

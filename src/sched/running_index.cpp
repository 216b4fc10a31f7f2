#include "sched/running_index.h"

#include <cmath>
#include <limits>

#include "core/check.h"

namespace gpufleet::sched {

namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// The whole second at or before `t` seconds (kNever past what int64_t holds).
int64_t SecondAtOrBefore(double t) {
  if (!(t < 9.0e18)) return kNever;
  if (t < -9.0e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(std::floor(t));
}

}  // namespace

VictimRank RankAsVictim(const RunningJob& r) {
  const double est = r.job.estimate_s;
  return VictimRank{std::isnan(est) ? HUGE_VAL : est + static_cast<double>(r.started_s),
                    r.started_s, r.job.id};
}

RunningIndex::RunningIndex(const QueuePolicy& policy)
    : policy_(policy), min_run_s_(policy.MinRunBeforePreemptionS()) {}

void RunningIndex::Count(size_t slot, int sign) {
  const Slot& s = slots_[slot];
  if ((count_of_class_[s.cls] += sign) == 0) count_of_class_.erase(s.cls);
  if (s.preemptible) {
    if ((preemptible_gpus_[s.cls] += sign * s.gpus) == 0) preemptible_gpus_.erase(s.cls);
    if (sign > 0) {
      victims_[s.cls].insert(Victim{s.rank, slot});
    } else {
      auto it = victims_.find(s.cls);
      GPUFLEET_CHECK(it != victims_.end() && it->second.erase(Victim{s.rank, slot}) == 1);
      if (it->second.empty()) victims_.erase(it);
    }
  }
  if (s.elastic) elastic_jobs_ += sign;
}

void RunningIndex::Evaluate(std::span<const RunningJob> running, size_t slot, int64_t now) {
  const RunningJob& r = running[slot];
  Slot& s = slots_[slot];
  s.gpus = GpusOf(r.placement);
  s.elastic = IsElastic(r.job);
  s.rank = RankAsVictim(r);
  const double ran_s = static_cast<double>(now - r.started_s);
  s.preemptible = policy_.Preemptive() && ran_s >= min_run_s_;
  s.check_s = kNever;
  s.eligible_s = kNever;
  if (!policy_.Preemptive()) {
    s.cls = 0;
    return;
  }
  // Exactly Scheduler::Schedule's computation.
  const double attained = r.job.attained_gpu_s + static_cast<double>(s.gpus) * ran_s;
  s.cls = policy_.PriorityClassAt(r.job, attained);
  const double change = policy_.NextClassChange(r.job, attained);
  if (std::isfinite(change) && s.gpus > 0) {
    // The class stays until the service reaches `change`; look a second early so that rounding
    // in the pass's own sum never crosses before the look.
    const double at =
        static_cast<double>(r.started_s) + (change - r.job.attained_gpu_s) / s.gpus - 1.0;
    s.check_s = std::max(now + 1, SecondAtOrBefore(at));
  }
  if (!s.preemptible) {
    s.eligible_s = std::max(
        now + 1, SecondAtOrBefore(static_cast<double>(r.started_s) + std::ceil(min_run_s_) - 1.0));
  }
}

void RunningIndex::Arm(size_t slot) {
  Slot& s = slots_[slot];
  s.stamp = ++next_stamp_;
  const int64_t at = std::min(s.check_s, s.eligible_s);
  if (at != kNever) checks_.push(Check{at, slot, s.stamp});
}

void RunningIndex::Append(std::span<const RunningJob> running, int64_t now) {
  GPUFLEET_CHECK(running.size() == slots_.size() + 1);
  slots_.emplace_back();
  Evaluate(running, slots_.size() - 1, now);
  Count(slots_.size() - 1, +1);
  Arm(slots_.size() - 1);
}

void RunningIndex::SwapRemove(size_t slot) {
  GPUFLEET_CHECK(slot < slots_.size());
  Count(slot, -1);
  if (slot + 1 != slots_.size()) {
    Count(slots_.size() - 1, -1);
    slots_[slot] = slots_.back();
    Count(slot, +1);
    Arm(slot);  // its pending check named the last slot
  }
  slots_.pop_back();
}

void RunningIndex::RecomputeAll(std::span<const RunningJob> running, int64_t now) {
  GPUFLEET_CHECK(running.size() == slots_.size());
  checks_ = {};
  for (size_t i = 0; i < slots_.size(); ++i) {
    Count(i, -1);
    Evaluate(running, i, now);
    Count(i, +1);
    Arm(i);
  }
}

void RunningIndex::AdvanceTo(std::span<const RunningJob> running, int64_t now) {
  GPUFLEET_CHECK(running.size() == slots_.size());
  GPUFLEET_CHECK(now >= now_ || now_ == INT64_MIN);
  now_ = now;
  while (!checks_.empty() && checks_.top().at <= now) {
    const Check c = checks_.top();
    checks_.pop();
    if (c.slot >= slots_.size() || slots_[c.slot].stamp != c.stamp) continue;  // stale
    Count(c.slot, -1);
    Evaluate(running, c.slot, now);
    Count(c.slot, +1);
    Arm(c.slot);
  }
  // Stale checks pile up as jobs stop; rebuild the heap when they outnumber the live ones.
  if (checks_.size() > 4 * slots_.size() + 1024) {
    std::vector<Check> live;
    while (!checks_.empty()) {
      const Check c = checks_.top();
      checks_.pop();
      if (c.slot < slots_.size() && slots_[c.slot].stamp == c.stamp) live.push_back(c);
    }
    checks_ = decltype(checks_)(std::greater<>(), std::move(live));
  }
}

}  // namespace gpufleet::sched

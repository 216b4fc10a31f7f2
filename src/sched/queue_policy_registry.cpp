#include "sched/queue_policy.h"

namespace gpufleet::sched {

const std::vector<QueuePolicyInfo>& QueuePolicies() {
  static const std::vector<QueuePolicyInfo> policies = {
      {"fifo", "first come, first served; strict order", &MakeFifo},
      {"priority", "higher priority first, then first come; any job that fits starts",
       &MakePriority},
      {"priority-backfill",
       "higher priority first, then first come, with EASY backfill on time limits (default)",
       &MakePriorityBackfill},
      {"backfill", "FIFO with EASY backfill on run-time estimates", &MakeEasyBackfill},
      {"sjf-oracle", "shortest job first on TRUE run times (upper bound, not deployable)",
       &MakeSjfOracle},
      {"qssf", "quasi-shortest-service-first on predicted GPU-time (Helios)", &MakeQssf},
      {"tiresias", "2D least-attained-service with preemption (Tiresias)", &MakeTiresias},
      {"fairshare",
       "weighted fair share across queues (DRF) with quotas, borrowing and reclaim by preemption",
       &MakeFairShare},
      {"las-qssf",
       "ours: Tiresias' attained-service classes and preemption, predicted GPU-time order within "
       "a class (deployable)",
       &MakeLasQssf},
      {"gittins",
       "ours: Gittins index of attained GPU-service from the learned service distribution, with "
       "preemption; predicted GPU-time within a class (deployable)",
       &MakeGittins},
  };
  return policies;
}

std::unique_ptr<QueuePolicy> MakeQueuePolicy(std::string_view name) {
  for (const auto& info : QueuePolicies()) {
    if (info.name == name) return info.make();
  }
  return nullptr;
}

std::string QueuePolicyNames() {
  std::string out;
  for (const auto& info : QueuePolicies()) {
    if (!out.empty()) out += ", ";
    out += info.name;
  }
  return out;
}

}  // namespace gpufleet::sched

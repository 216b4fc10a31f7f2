#include "sched/policy_registry.h"

namespace gpufleet::sched {

const std::vector<PlacementPolicyInfo>& PlacementPolicies() {
  static const std::vector<PlacementPolicyInfo> policies = {
      {"random", "a uniformly random feasible node (published baseline)", false, &MakeRandomFit},
      {"dotprod", "largest dot product of free and requested CPU/GPU", true, &MakeDotProduct},
      {"gpuclustering", "keep alike GPU jobs together", true, &MakeGpuClustering},
      {"gpupacking", "fill partly used GPUs, then partly used nodes", true, &MakeGpuPacking},
      {"bestfit", "least CPU and GPU left over", true, &MakeBestFit},
      {"fgd", "fragmentation gradient descent (FGD, USENIX ATC'23)", true, &MakeFgd},
      {"fgd-balance", "FGD plus CPU/GPU balance from the workload's CPU per GPU (gpufleet)", true,
       &MakeFgdBalance},
  };
  return policies;
}

std::unique_ptr<PlacementPolicy> MakePlacementPolicy(std::string_view name) {
  for (const auto& info : PlacementPolicies()) {
    if (info.name == name) return info.make();
  }
  return nullptr;
}

std::string PlacementPolicyNames() {
  std::string out;
  for (const auto& info : PlacementPolicies()) {
    if (!out.empty()) out += ", ";
    out += info.name;
  }
  return out;
}

}  // namespace gpufleet::sched

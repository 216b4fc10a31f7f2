#pragma once
// Placement policies by name. Each policy lives in its own file under policies/ and is listed
// once in policy_registry.cpp.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sched/placement_policy.h"

namespace gpufleet::sched {

struct PlacementPolicyInfo {
  std::string_view name;
  std::string_view summary;
  bool deterministic;  // same input, same placement (everything but random fit)
  std::unique_ptr<PlacementPolicy> (*make)();
};

// Every registered placement policy, in a fixed order (the published six first).
const std::vector<PlacementPolicyInfo>& PlacementPolicies();
// The policy named `name`, or nullptr.
std::unique_ptr<PlacementPolicy> MakePlacementPolicy(std::string_view name);
// "random, dotprod, ..." for help and error messages.
std::string PlacementPolicyNames();

// Factories, one per file under policies/.
std::unique_ptr<PlacementPolicy> MakeRandomFit();
std::unique_ptr<PlacementPolicy> MakeDotProduct();
std::unique_ptr<PlacementPolicy> MakeGpuClustering();
std::unique_ptr<PlacementPolicy> MakeGpuPacking();
std::unique_ptr<PlacementPolicy> MakeBestFit();
std::unique_ptr<PlacementPolicy> MakeFgd();
std::unique_ptr<PlacementPolicy> MakeFgdBalance();

}  // namespace gpufleet::sched

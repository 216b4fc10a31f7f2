#pragma once
// The openb placement experiment of the FGD paper: pods arrive one by one in a given order, never
// leave, and are placed by a policy or dropped; after every arrival the experiment records GPU
// demand so far, GPU allocated, and the cluster's fragmentation. `SummarizeCurves` turns that into
// the published curves: allocation and fragmentation ratio at every 1% of arrived demand.

#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "sched/placement_policy.h"
#include "sched/workload_profile.h"
#include "sim/openb_trace.h"

namespace gpufleet::sim {

// The workload profile FGD and the fragmentation metric use: the original pods, no clones.
sched::WorkloadProfile ProfileOf(const OpenbWorkload& workload);

// A seeded order as the published simulator makes one: the pods shuffled, then clones drawn
// uniformly with replacement while arrived GPU demand stays within `tune` x capacity, then a
// random tie-break rank for every node.
PlacementOrder GenerateOrder(const OpenbWorkload& workload, uint64_t seed, double tune);

struct PlacementRun {
  std::vector<int64_t> arrived_milli;  // GPU demand arrived after each event
  std::vector<int64_t> used_milli;     // GPU allocated after each event
  std::vector<double> frag_ratio;      // fragmentation ratio (%) after each event, 2 decimals
  std::vector<int32_t> node;           // node each pod went to, -1 when it failed
  std::vector<uint32_t> gpus;          // GPU mask it took
  int failed = 0;
  int64_t capacity_milli = 0;
  int64_t scores_computed = 0;
  int64_t nodes_reranked = 0;  // Placer::nodes_reranked
};

// Prepares `policy` as the controller prepares it live: with the workload's profile and with the
// cluster's nodes.
void PreparePlacementPolicy(sched::PlacementPolicy& policy, const sched::WorkloadProfile& profile,
                            const OpenbWorkload& workload);

// Places the pods of `order` with `policy`, which must be prepared (PreparePlacementPolicy).
// `rng` feeds randomized policies only.
PlacementRun RunPlacement(const OpenbWorkload& workload, const PlacementOrder& order,
                          const sched::PlacementPolicy& policy,
                          const sched::WorkloadProfile& profile, core::Rng& rng);

struct PlacementCurves {
  std::vector<double> allocation;  // [0..max_percent], % of GPU capacity allocated; NaN if none
  std::vector<double> frag_ratio;  // same buckets
  double failed = 0;
  double pods = 0;
};

// The published bucketing: each event falls in the bucket of its arrived demand (% of capacity,
// rounded half to even); a bucket's value is the numpy mean of its events, and an empty bucket
// takes the events of its two neighbours.
PlacementCurves SummarizeCurves(const PlacementRun& run, int max_percent);

// Element-wise mean of several seeds' curves (allocation rounded to 2 decimals, as published).
PlacementCurves MeanCurves(const std::vector<PlacementCurves>& runs);

}  // namespace gpufleet::sim

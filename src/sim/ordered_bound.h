#pragma once
// An order-aware upper bound on the openb experiment for small clusters (issue 18, section 2).
//
// The order-free bound (placement_bound.h) may leave out any pod, so it leaves out the pods that
// pack badly and reaches 100%. The experiment cannot: a pod that fits some node when it arrives is
// placed. This program keeps that rule. Every pod, in arrival order, is placed on one node and
// one GPU set, or left out only if, at its arrival, every node it could ever use is short of CPU,
// memory or a GPU set it fits, given the pods placed before it. Its integer optimum is the most
// GPU any placement policy could allocate on the same cluster and arrival order, with knowledge of
// the future; the policies' allocation on the same instance shows how far from it they are.
//
// Exact integer programs of this kind are solvable only for a few nodes and a few dozen pods, so
// `OrderedSubsample` makes small instances from the real trace: a random handful of its nodes and
// a random sample of its pods, arriving while their GPU demand stays within 130% of those nodes'
// GPUs.
//
// Pure: builds the program (a solver maximizes it: bench/placement_bound.cpp hands it to CBC, or
// to GLPK) and maps a policy's run onto it, which is how the tests check that no policy's run is
// cut off. With whole numbers everywhere the optimum is exactly the best placement that keeps
// the rule, knowing the future.

#include <cstdint>
#include <span>
#include <vector>

#include "core/rng.h"
#include "sim/openb_trace.h"
#include "sim/placement_bound.h"
#include "sim/placement_experiment.h"

namespace gpufleet::sim {

// A small instance of `workload`: `nodes` of its nodes drawn at random, and its pods shuffled and
// taken until the next one would take their GPU demand over `tune` x the drawn nodes' GPUs. Pods
// that fit none of the drawn nodes (their model or size is missing there) are not drawn. The order
// places the instance's pods 0, 1, ... in turn with random node tie-break ranks.
struct OrderedInstance {
  OpenbWorkload workload;
  PlacementOrder order;
};
OrderedInstance OrderedSubsample(const OpenbWorkload& workload, int nodes, double tune,
                                 core::Rng& rng);

struct OrderedPlacementProgram {
  LinearProgram lp;          // with lp.integer set for the placement and reason columns
  double capacity_gpus = 0;  // the bound in % is 100 * optimum / capacity_gpus
  int binary_columns = 0;
  // Columns, -1 where absent: place[i][j] pod i on node j; gpu[i][j][g] pod i on GPU g of node j.
  std::vector<std::vector<int>> place;
  std::vector<std::vector<std::vector<int>>> gpu;
  // Reasons pod i may be left out, per node j it could use: short of CPU, memory, GPUs; and
  // blocked[i][j][g] (continuous, 0..1): GPU g of node j is too full for pod i when it arrives.
  std::vector<std::vector<int>> short_cpu, short_memory, short_gpu;
  std::vector<std::vector<std::vector<int>>> blocked;
};

// The program for `workload`'s pods arriving in the order 0, 1, ... (an OrderedInstance's).
// Identical nodes and a node's GPUs are interchangeable, so the program orders them by first use
// (a GPU or a node is used only after the one before it), which cuts no placement up to renaming.
OrderedPlacementProgram BuildOrderedPlacementProgram(const OpenbWorkload& workload);

// `run` (pods placed in the order 0, 1, ...) as a point of `program`, renamed into first-use order:
// every row holds for any real run, which the tests check.
std::vector<double> OrderedSolutionOf(const OrderedPlacementProgram& program,
                                      const OpenbWorkload& workload, const PlacementRun& run);

}  // namespace gpufleet::sim

#pragma once
// An upper bound on what any placement policy can allocate in the openb experiment (issue 18,
// section 2). Pods never leave, so the GPU allocated at any moment is a packing of the pods
// arrived so far. The bound relaxes "which node" to "which class of identical nodes" and the pods
// to fractions, keeping every class's total CPU, memory and GPU capacity, per-GPU and per-node
// packing inequalities (dual feasible functions, below) and each pod's own fit and GPU models. It
// ignores the arrival order, so it also bounds an offline placer that knows every pod in advance.
//
// Pure: it builds a linear program; a solver (bench/placement_bound.cpp, GLPK) maximizes it.

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/openb_trace.h"
#include "sim/placement_experiment.h"

namespace gpufleet::sim {

// maximize objective·x subject to, for every row, sum(terms) <= upper, and 0 <= x <= column_upper;
// x[j] whole where integer[j] (an empty `integer`: none).
struct LinearProgram {
  struct Row {
    std::string name;
    double upper = 0;
    std::vector<std::pair<int, double>> terms;  // (column, coefficient)
  };
  std::vector<std::string> column_names;
  std::vector<double> objective;
  std::vector<double> column_upper;
  std::vector<bool> integer;
  std::vector<Row> rows;
};

// Fekete and Schepers' dual feasible function u_k on [0, 1]: x when (k+1)x is a whole number,
// floor((k+1)x)/k otherwise. For items that fit together in a bin (sizes summing to <= 1), their
// u_k values also sum to <= 1, so sum of u_k over what a bin holds <= 1 is a valid inequality.
double DualFeasible(int k, double x);

struct PlacementBoundModel {
  using NodeKey = std::tuple<int64_t, int64_t, int, core::ModelId>;  // CPU, memory, GPUs, model
  using PodKey =
      std::tuple<int64_t, int64_t, int, int, uint64_t>;  // CPU, memory, GPUs, milli, models
  static NodeKey KeyOf(const core::NodeSpec& node);
  static PodKey KeyOf(const core::JobSpec& pod);
  // The column that counts pods like `pod` on nodes like `node`, or -1 when the program has none
  // (the pod does not fit such a node, or none like it arrived, or it uses no GPU).
  int ColumnOf(const core::NodeSpec& node, const core::JobSpec& pod) const;

  LinearProgram lp;
  double capacity_gpus = 0;  // the cluster's GPUs; the bound in % is 100 * optimum / capacity_gpus
  int node_classes = 0;      // distinct (CPU, memory, GPUs, model) nodes
  int pod_types = 0;         // distinct GPU pods (CPU, memory, GPUs, milli-GPUs, models)
  int64_t arrived_gpu_milli = 0;
  std::map<NodeKey, int> class_index;
  std::map<PodKey, int> type_index;
  std::map<std::pair<int, int>, int> column_index;  // (class, type) -> column
};

// The bound's linear program for the pods `pods` (indices into workload.pods, repeats allowed:
// clones). CPU-only pods are left out: they add nothing to the GPU allocated, and leaving them
// unplaced is always allowed in an upper bound.
PlacementBoundModel BuildPlacementBound(const OpenbWorkload& workload, std::span<const int> pods);

// The pods an order has delivered by the end of `percent`'s bucket of SummarizeCurves (arrived GPU
// demand, % of capacity, rounded half to even; the next bucket too when that one is empty, as the
// curves then use it). The policy's published allocation at `percent` is a mean over events no
// later than these, and allocation never falls, so the bound of these pods bounds it.
std::vector<int> PodsArrivedBy(const OpenbWorkload& workload, const PlacementOrder& order,
                               int percent);

}  // namespace gpufleet::sim

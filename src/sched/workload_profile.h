#pragma once
// `WorkloadProfile`: the distribution of job shapes a cluster expects, and the fragmentation
// measure built on it (FGD, USENIX ATC'23). A node's fragmentation is the GPU capacity that the
// typical jobs could not use there: for each typical job type t with weight f_t, the free GPU
// milli that t cannot use on the node (all of it when t cannot fit at all).
//
// Weights are kept as integer counts, so a node's fragmentation times `total_count()` is an
// exact integer (`WeightedFragmentation`) and sums over nodes never drift.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/node.h"

namespace gpufleet::sched {

struct JobType {
  int64_t cpu_milli = 0;
  int gpu_milli = 0;
  int num_gpu = 0;
  core::ModelSet models = core::ModelSet::All();
  std::string spec_label;  // the spec as written in the input; orders ties between types
  int64_t count = 0;
};

class WorkloadProfile {
 public:
  WorkloadProfile() = default;
  // Counts `jobs` by (cpu, gpu_milli, num_gpu, spec) and keeps the most frequent types that
  // together cover at least `coverage` of the jobs. `spec_labels`, if not empty, gives each job's
  // GPU-model spec as written (the tie-break between equally frequent types); otherwise the
  // model mask stands in for it.
  static WorkloadProfile Build(std::span<const core::JobSpec> jobs,
                               std::span<const std::string> spec_labels, double coverage = 0.95);

  std::span<const JobType> types() const { return types_; }
  int64_t total_count() const { return total_count_; }

  // Σ_t count_t · φ_t for a node of `model` with `cpu_free` and per-GPU free milli `gpu_free`.
  // Divide by `total_count()` for the node's fragmentation in milli-GPUs.
  int64_t WeightedFragmentation(core::ModelId model, int64_t cpu_free, const int32_t* gpu_free,
                                int num_gpus) const;
  // The same measure computed in floating point exactly as the FGD paper's simulator does it
  // (weights (count/total)/(kept/total); amounts accumulated per fragmentation category, then the
  // categories summed), for reproducing its published decisions to the last tie. Mathematically
  // equal to WeightedFragmentation / total_count; differs only by float rounding.
  double PublishedFragmentation(core::ModelId model, int64_t cpu_free, const int32_t* gpu_free,
                                int num_gpus) const;
  int64_t WeightedFragmentation(const core::NodeState& node) const {
    return WeightedFragmentation(node.model, node.cpu_free, node.gpu_free.data(), node.num_gpus);
  }

 private:
  struct ModelView {  // the types that can use GPUs of one model, for fast evaluation
    std::vector<JobType> gpu_types;
    int64_t unusable_count = 0;  // weight of types that can use no GPU of this model
  };
  std::vector<JobType> types_;
  std::vector<double> published_weights_;  // per type, as the published simulator rounds them
  std::vector<int32_t> thresholds_;        // distinct gpu_milli of GPU types, descending
  std::vector<int> threshold_of_type_;     // index into thresholds_ per type (-1: CPU-only)
  std::vector<ModelView> by_model_;
  int64_t total_count_ = 0;
};

}  // namespace gpufleet::sched

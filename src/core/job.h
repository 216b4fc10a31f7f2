#pragma once
// `JobSpec`: what a job (a Kubernetes pod in the openb traces) asks of one node: CPU, memory and
// GPUs, either whole GPUs or a share of one GPU, optionally restricted to some GPU models.

#include <cstdint>
#include <string>

#include "core/gpu_catalog.h"
#include "core/result.h"

namespace gpufleet::core {

inline constexpr int kGpuMilli = 1000;  // the capacity of one GPU in milli-GPUs

struct JobSpec {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int num_gpu = 0;    // GPUs on one node
  int gpu_milli = 0;  // milli-GPUs taken from each of those GPUs; < 1000 only when num_gpu == 1
  ModelSet gpu_models = ModelSet::All();  // allowed GPU models
  // Fields for the queueing layer; placement ignores them for now.
  int gang_nodes = 1;  // nodes the job spans, all started together
  int priority = 0;
  std::string queue;

  bool UsesGpu() const { return num_gpu > 0 && gpu_milli > 0; }
  bool SharesGpu() const { return num_gpu == 1 && gpu_milli > 0 && gpu_milli < kGpuMilli; }
  int64_t GpuDemandMilli() const { return int64_t{num_gpu} * gpu_milli; }
};

// Checks the spec's own consistency (not whether any node can hold it). The error names the field.
Result<bool> ValidateJobSpec(const JobSpec& job);

// The port rank 0 of job `job_id` listens on for its peers (MASTER_PORT), the same on every node
// and for single- and multi-node runs: 29500 (torchrun's default) plus the id modulo 1000, so
// that jobs sharing a node rarely collide.
inline int MasterPortOf(int64_t job_id) { return 29500 + static_cast<int>(job_id % 1000); }

}  // namespace gpufleet::core

#pragma once
// `JobSpec`: what a job (a Kubernetes pod in the openb traces) asks of one node: CPU, memory and
// GPUs, either whole GPUs or a share of one GPU, optionally restricted to some GPU models.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// The distributed-training environment of node rank `node_rank` of job `job_id` on `nodes`
// nodes with `gpus_per_node` GPUs each, whose rank 0 runs at `master_addr`: torchrun's env://
// variables, defined here once for every launch. One node (`nodes` <= 1): one process is the
// whole world (WORLD_SIZE 1) on loopback. Several: one launcher per node, WORLD_SIZE counting
// a process per GPU, RANK the node's first, and GPUFLEET_NNODES / GPUFLEET_NODE_RANK.
inline std::vector<std::pair<std::string, std::string>> DistributedEnv(
    int64_t job_id, const std::string& master_addr, int nodes, int node_rank, int gpus_per_node) {
  const std::string port = std::to_string(MasterPortOf(job_id));
  const int per_node = gpus_per_node > 0 ? gpus_per_node : 1;
  if (nodes <= 1) {
    return {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port},        {"WORLD_SIZE", "1"},
            {"RANK", "0"},                {"NODE_RANK", "0"},           {"LOCAL_WORLD_SIZE",
                                                                         std::to_string(per_node)}};
  }
  return {{"MASTER_ADDR", master_addr},
          {"MASTER_PORT", port},
          {"WORLD_SIZE", std::to_string(per_node * nodes)},
          {"NODE_RANK", std::to_string(node_rank)},
          {"RANK", std::to_string(node_rank * per_node)},
          {"LOCAL_RANK", "0"},
          {"LOCAL_WORLD_SIZE", std::to_string(per_node)},
          {"GPUFLEET_NNODES", std::to_string(nodes)},
          {"GPUFLEET_NODE_RANK", std::to_string(node_rank)}};
}

// Whether `name` is a variable gpufleet sets for a job, which a job's own `env` may not name: its
// id and restart count, the torchrun env:// variables of DistributedEnv (GPUFLEET_NNODES and
// GPUFLEET_NODE_RANK among them), and the GPU selection: CUDA_VISIBLE_DEVICES, and
// NVIDIA_VISIBLE_DEVICES, which a container runtime's NVIDIA hook would obey to expose other GPUs.
// Other GPUFLEET_* names (GPUFLEET_SERVER and GPUFLEET_TOKEN for a job that submits jobs) pass.
inline bool IsGpufleetJobVariable(std::string_view name) {
  // clang-format off
  constexpr std::string_view kNames[] = {
      "GPUFLEET_JOB_ID", "GPUFLEET_RESTART_COUNT", "GPUFLEET_NNODES", "GPUFLEET_NODE_RANK",
      "MASTER_ADDR",     "MASTER_PORT",            "WORLD_SIZE",      "RANK",
      "NODE_RANK",       "LOCAL_RANK",             "LOCAL_WORLD_SIZE", "CUDA_VISIBLE_DEVICES",
      "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"};
  // clang-format on
  for (std::string_view n : kNames) {
    if (name == n) return true;
  }
  return false;
}

// Whether `name` is a portable environment variable name: a letter or '_', then letters, digits
// and '_' (POSIX's portable set; shells cannot even read others).
inline bool IsPortableVariableName(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    const bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace gpufleet::core

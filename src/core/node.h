#pragma once
// Nodes: `NodeSpec` is what a node has; `NodeState` is what is free on it now. GPUs are measured
// in milli-GPUs so that shared GPUs (a job taking 300 of a GPU's 1000) and whole GPUs are one kind.

#include <array>
#include <bit>
#include <cstdint>
#include <string>

#include "core/gpu_catalog.h"
#include "core/job.h"

namespace gpufleet::core {

// The most GPUs one node may have: every edge (heartbeats, node lists, --simulated-gpus) checks
// against this one constant. 32 covers 8- and 16-GPU HGX and PCIe servers with room to spare,
// and fits `GpuMask`; MIG slices are GPU shares of their GPU, not GPUs of their own.
inline constexpr int kMaxGpusPerNode = 32;

// What a node that does not report its CPU or memory (an agent that does not say) is given: room
// for any job. Policies that weigh a node's CPU against its GPUs leave such a node's CPU out.
inline constexpr int64_t kUnreportedCpuMilli = int64_t{1} << 30;
inline constexpr int64_t kUnreportedMemoryMib = int64_t{1} << 40;

struct NodeSpec {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int num_gpus = 0;
  ModelId model = 0;  // every GPU of a node is of one model
};

// A bit mask of GPU indices on one node.
using GpuMask = uint32_t;

// The number of GPUs in `gpus`. Hot in every scheduling pass: without a target that has POPCNT,
// std::popcount is a call into libgcc's table-driven routine, so the baseline build counts with
// the usual shift-and-add instead (a few ALU operations, inlined).
constexpr int GpuCount(GpuMask gpus) {
#ifdef __POPCNT__
  return std::popcount(gpus);
#else
  gpus = gpus - ((gpus >> 1) & 0x55555555u);
  gpus = (gpus & 0x33333333u) + ((gpus >> 2) & 0x33333333u);
  return static_cast<int>((((gpus + (gpus >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24);
#endif
}

// The kind of GPU job, used by policies that group alike jobs: bit 0 for GPU-sharing jobs,
// bit k for jobs taking k whole GPUs.
inline uint32_t JobClassBit(const JobSpec& job) {
  if (!job.UsesGpu()) return 0;
  return job.SharesGpu() ? 1u : (1u << (job.num_gpu < 31 ? job.num_gpu : 31));
}

// Free resources of one node. Kept small and flat: placement scans every node for every job.
struct NodeState {
  // Hot fields first: the filter reads only these, one cache line per node.
  int64_t cpu_free = 0;
  int64_t memory_free = 0;
  int32_t gpu_free_total = 0;  // sum of gpu_free
  int32_t gpu_free_max = 0;    // the largest gpu_free
  uint32_t version = 0;        // changes whenever anything here changes
  uint32_t job_classes = 0;    // union of JobClassBit over the GPU jobs on the node
  uint8_t num_gpus = 0;
  uint8_t full_free_gpus = 0;  // GPUs with all 1000 milli free
  ModelId model = 0;
  std::array<int32_t, kMaxGpusPerNode> gpu_free{};  // milli-GPUs free on each GPU

  // Whether `job` fits on this node now: CPU, memory, GPU model, and GPU count or share.
  bool Fits(const JobSpec& job) const {
    if (job.cpu_milli > cpu_free || job.memory_mib > memory_free) return false;
    if (!job.UsesGpu()) return true;
    if (!job.gpu_models.Contains(model)) return false;
    if (job.num_gpu == 1) return gpu_free_max >= job.gpu_milli;
    if (job.gpu_milli == kGpuMilli) return full_free_gpus >= job.num_gpu;
    return CountGpusWithFree(job.gpu_milli) >= job.num_gpu;
  }

  int CountGpusWithFree(int32_t milli) const {
    int n = 0;
    for (int i = 0; i < num_gpus; ++i) n += gpu_free[i] >= milli;
    return n;
  }
};

}  // namespace gpufleet::core

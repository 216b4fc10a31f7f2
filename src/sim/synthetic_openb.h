#pragma once
// A synthetic workload shaped like the openb trace (node types, and the mix of CPU-only,
// GPU-sharing, whole-GPU and multi-GPU pods), for machines without ../shared/traces and for
// scaling benchmarks. Same seed, same workload.

#include <cstdint>

#include "core/gpu_catalog.h"
#include "sim/openb_trace.h"

namespace gpufleet::sim {

// About `nodes` nodes with the openb mix of models, and enough pods to ask for about
// `demand_ratio` of the cluster's GPUs.
OpenbWorkload GenerateSyntheticOpenb(const core::GpuCatalog& catalog, int nodes,
                                     double demand_ratio, uint64_t seed);

// The workload repeated `factor` times (nodes and pods, renamed), for scaling measurements.
OpenbWorkload ReplicateWorkload(const OpenbWorkload& workload, int factor);

}  // namespace gpufleet::sim

#pragma once
// The scheduler's view of a node's GPU topology (`core::GpuLinks`), made from what the probe
// read, for the agent to send in its heartbeat.
#include "core/gpu_links.h"
#include "gpu/gpu_sample.h"

namespace gpufleet::gpu {

// NVLink counts as read (capped at core::kMaxNvLinksPerPair); PCIe classes from the
// common-ancestor levels, an unknown level counting as across sockets. Empty when the node has
// fewer than two GPUs, or when the two matrices are not square and of one size.
core::GpuLinks LinksFromTopology(const GpuTopology& topology);

}  // namespace gpufleet::gpu

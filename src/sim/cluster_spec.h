#pragma once
// Cluster specs for the time simulator: a named one (`philly-512`) or a TOML file describing
// groups of identical nodes, heterogeneous GPU models allowed (their relative speeds come from the
// GPU catalog). File format:
//
//   name = "lab"                 # optional; default: the file name
//   [[nodes]]                    # one table per group of identical nodes
//   count = 4                    # optional, default 1
//   name = "a100"                # optional prefix of node names, default "node"
//   gpus = 8                     # 0..16
//   gpu_model = "A100-80G"       # a catalog name or alias (required when gpus > 0)
//   cpu_cores = 64               # optional, default 8 per GPU (at least 8)
//   memory_gib = 512             # optional, default 64 per GPU (at least 64)
//
// Unknown keys, wrong types and values out of range are errors naming the file, the line and the
// key; a malformed file, or one with a non-ASCII character (comments included), is an error naming
// the line and column.
#include <string>
#include <string_view>

#include "core/gpu_catalog.h"
#include "core/result.h"
#include "sim/time_sim.h"

namespace gpufleet::sim {

// Parses a TOML spec from `text`; `origin` names it in errors (and is the default name).
core::Result<ClusterSpec> ParseClusterToml(std::string_view text, const std::string& origin,
                                           const core::GpuCatalog& catalog);
// `name_or_path`: a named cluster, a path ending in ".toml", or "openb:FILE" (an openb node list:
// sn,cpu_milli,memory_mib,gpu,model).
core::Result<ClusterSpec> ResolveCluster(const std::string& name_or_path,
                                         const core::GpuCatalog& catalog);

}  // namespace gpufleet::sim

#pragma once
// Readers for the Alibaba openb 2023 GPU cluster trace (FGD paper, USENIX ATC'23): the node list,
// the pod lists, and the published arrival-order files. Every error names file, line and column.

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "core/gpu_catalog.h"
#include "core/job.h"
#include "core/node.h"
#include "core/result.h"

namespace gpufleet::sim {

struct OpenbPod {
  core::JobSpec job;
  std::string spec_label;      // gpu_spec as written, e.g. "V100M16|V100M32"
  int line = 0;                // line in the pod list
  int64_t creation_time = -1;  // seconds; -1 when the list has no time columns
  int64_t deletion_time = -1;
};

struct OpenbWorkload {
  std::vector<core::NodeSpec> nodes;
  std::vector<OpenbPod> pods;
  std::string nodes_path, pods_path;
};

// Columns sn,cpu_milli,memory_mib,gpu,model.
core::Result<std::vector<core::NodeSpec>> ReadOpenbNodes(const std::string& path,
                                                         const core::GpuCatalog& catalog);
// The same from the file's text; `path` names it in errors.
core::Result<std::vector<core::NodeSpec>> ParseOpenbNodes(std::string text, const std::string& path,
                                                          const core::GpuCatalog& catalog);
// Columns name,cpu_milli,memory_mib,num_gpu,gpu_milli and optionally gpu_spec, qos (kept as the
// job's queue), creation_time, deletion_time; other columns are ignored.
core::Result<std::vector<OpenbPod>> ReadOpenbPods(const std::string& path,
                                                  const core::GpuCatalog& catalog);
// The same from the file's text; `path` names it in errors.
core::Result<std::vector<OpenbPod>> ParseOpenbPods(std::string text, const std::string& path,
                                                   const core::GpuCatalog& catalog);
// Reads both and checks that every pod fits at least one node shape: a pod asking for more GPUs
// than any node has (of its allowed models) is an error, not a pod that silently always fails.
core::Result<OpenbWorkload> ReadOpenbWorkload(const std::string& nodes_path,
                                              const std::string& pods_path,
                                              const core::GpuCatalog& catalog);

// An arrival order: indices into the workload's pods (clones repeat their original's index) and
// each node's tie-break rank.
struct PlacementOrder {
  std::vector<int> pods;
  std::vector<uint32_t> node_rank;
  std::string source;  // file name or "seed N"
};

// Reads a published order file: "pod NAME" lines in arrival order (clones named
// NAME-tuned-<i>), "node RANK NAME" lines, '#' comments.
core::Result<PlacementOrder> ReadOrderFile(const std::string& path, const OpenbWorkload& workload);
// The same from a stream; `path` names it in errors and is the order's `source`.
core::Result<PlacementOrder> ParseOrderFile(std::istream& in, const std::string& path,
                                            const OpenbWorkload& workload);

}  // namespace gpufleet::sim

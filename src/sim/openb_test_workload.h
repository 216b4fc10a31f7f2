#pragma once
// Test helper: an openb workload from node and job specs built in the test (testing/builders.h).
#include <utility>
#include <vector>

#include "sim/openb_trace.h"

namespace gpufleet::sim {

inline OpenbWorkload MakeWorkload(std::vector<core::NodeSpec> nodes,
                                  std::vector<core::JobSpec> jobs) {
  OpenbWorkload w;
  w.nodes = std::move(nodes);
  for (auto& job : jobs) {
    OpenbPod pod;
    pod.job = std::move(job);
    w.pods.push_back(std::move(pod));
  }
  w.nodes_path = "nodes";
  w.pods_path = "pods";
  return w;
}

}  // namespace gpufleet::sim

// Fuzzes the published order file reader (sim/openb_trace.h, ReadOrderFile) against a small fixed
// workload of three nodes and four pods.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/gpu_catalog.h"
#include "sim/openb_trace.h"

namespace {

const gpufleet::sim::OpenbWorkload& Workload() {
  using namespace gpufleet;
  static const sim::OpenbWorkload workload = [] {
    const core::GpuCatalog& catalog = core::GpuCatalog::Builtin();
    sim::OpenbWorkload w;
    w.nodes_path = "nodes.csv";
    w.pods_path = "pods.csv";
    w.nodes = std::move(sim::ParseOpenbNodes("sn,cpu_milli,memory_mib,gpu,model\n"
                                             "n0,96000,786432,8,V100M32\n"
                                             "n1,96000,786432,2,T4\n"
                                             "n2,32000,131072,0,\n",
                                             w.nodes_path, catalog))
                  .value();
    w.pods = std::move(sim::ParseOpenbPods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                           "p0,8000,30000,1,1000\n"
                                           "p1,4000,1000,1,500\n"
                                           "p2,1000,1000,0,0\n"
                                           "p-tuned,8000,30000,2,1000\n",
                                           w.pods_path, catalog))
                 .value();
    return w;
  }();
  return workload;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  const sim::OpenbWorkload& workload = Workload();
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  auto order = sim::ParseOrderFile(in, "fuzz.order", workload);
  if (!order) return 0;
  GPUFLEET_CHECK(!order.value().pods.empty());
  for (int pod : order.value().pods) {
    GPUFLEET_CHECK(pod >= 0 && pod < static_cast<int>(workload.pods.size()));
  }
  // Node ranks are a permutation of 0..nodes-1.
  std::vector<int> seen(workload.nodes.size(), 0);
  GPUFLEET_CHECK(order.value().node_rank.size() == workload.nodes.size());
  for (uint32_t rank : order.value().node_rank) {
    GPUFLEET_CHECK(rank < workload.nodes.size() && !seen[rank]);
    seen[rank] = 1;
  }
  return 0;
}

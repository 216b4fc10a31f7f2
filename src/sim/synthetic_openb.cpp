#include "sim/synthetic_openb.h"

#include <cstdio>
#include <iterator>

#include "core/check.h"
#include "core/rng.h"

namespace gpufleet::sim {

namespace {

struct NodeShape {
  const char* model;
  int64_t cpu_milli, memory_mib;
  int gpus;
  int weight;  // nodes of this shape per 1,213 in openb
};

// The node shapes of the openb node list, with their frequencies.
constexpr NodeShape kNodeShapes[] = {
    {"G2", 96000, 393216, 8, 549},     {"T4", 104000, 524288, 2, 387},
    {"P100", 16000, 122880, 2, 107},   {"G3", 128000, 786432, 8, 39},
    {"V100M16", 32000, 131072, 4, 28}, {"P100", 64000, 262144, 2, 22},
    {"V100M32", 96000, 786432, 8, 21}, {"V100M16", 8000, 32768, 1, 19},
    {"T4", 96000, 393216, 4, 17},      {"V100M32", 48000, 376832, 4, 9},
    {"V100M16", 64000, 262144, 8, 7},  {"A10", 128000, 1048576, 1, 2},
};

constexpr int kShareMilli[] = {100, 200, 250, 300, 400, 460, 500, 600, 700, 800};
constexpr int64_t kCpu[] = {1000, 2000, 4000, 6000, 8000, 12000, 16000, 32000};

}  // namespace

OpenbWorkload GenerateSyntheticOpenb(const core::GpuCatalog& catalog, int nodes,
                                     double demand_ratio, uint64_t seed) {
  core::Rng rng(seed);
  OpenbWorkload w;
  w.nodes_path = "synthetic-nodes";
  w.pods_path = "synthetic-pods";
  int total_weight = 0;
  for (const auto& s : kNodeShapes) total_weight += s.weight;
  int64_t gpus = 0;
  for (int i = 0; i < nodes; ++i) {
    int pick = static_cast<int>(rng.Below(total_weight));
    const NodeShape* shape = &kNodeShapes[0];
    for (const auto& s : kNodeShapes) {
      if (pick < s.weight) {
        shape = &s;
        break;
      }
      pick -= s.weight;
    }
    core::NodeSpec node;
    char name[32];
    std::snprintf(name, sizeof name, "synthetic-node-%04d", i);
    node.name = name;
    node.cpu_milli = shape->cpu_milli;
    node.memory_mib = shape->memory_mib;
    node.num_gpus = shape->gpus;
    auto model = catalog.Find(shape->model);
    GPUFLEET_CHECK(model.has_value());
    node.model = *model;
    gpus += shape->gpus;
    w.nodes.push_back(std::move(node));
  }
  const auto t4 = catalog.ParseSpec("T4").value();
  const auto v100 = catalog.ParseSpec("V100M16|V100M32").value();
  int64_t demand = 0;
  for (int i = 0; static_cast<double>(demand) < demand_ratio * 1000.0 * static_cast<double>(gpus);
       ++i) {
    OpenbPod pod;
    char name[32];
    std::snprintf(name, sizeof name, "synthetic-pod-%05d", i);
    core::JobSpec& job = pod.job;
    job.name = name;
    const uint64_t kind = rng.Below(100);
    job.cpu_milli = kCpu[rng.Below(std::size(kCpu))];
    job.memory_mib = job.cpu_milli / 1000 * 4096;
    if (kind < 13) {  // CPU-only
      job.num_gpu = 0;
      job.gpu_milli = 0;
    } else if (kind < 51) {  // shares one GPU
      job.num_gpu = 1;
      job.gpu_milli = kShareMilli[rng.Below(std::size(kShareMilli))];
    } else if (kind < 98) {  // one whole GPU
      job.num_gpu = 1;
      job.gpu_milli = 1000;
    } else {  // several whole GPUs
      job.num_gpu = 2 << rng.Below(3);
      job.gpu_milli = 1000;
    }
    const uint64_t spec = rng.Below(100);
    if (job.UsesGpu() && spec < 5) {
      job.gpu_models = t4;
      pod.spec_label = "T4";
    } else if (job.UsesGpu() && spec < 7) {
      job.gpu_models = v100;
      pod.spec_label = "V100M16|V100M32";
    }
    pod.line = i + 2;
    demand += job.GpuDemandMilli();
    w.pods.push_back(std::move(pod));
  }
  return w;
}

OpenbWorkload ReplicateWorkload(const OpenbWorkload& workload, int factor) {
  GPUFLEET_CHECK(factor >= 1);
  OpenbWorkload out;
  out.nodes_path = workload.nodes_path + " x" + std::to_string(factor);
  out.pods_path = workload.pods_path + " x" + std::to_string(factor);
  for (int r = 0; r < factor; ++r) {
    const std::string suffix = r == 0 ? "" : "-r" + std::to_string(r);
    for (auto node : workload.nodes) {
      node.name += suffix;
      out.nodes.push_back(std::move(node));
    }
    for (auto pod : workload.pods) {
      pod.job.name += suffix;
      out.pods.push_back(std::move(pod));
    }
  }
  return out;
}

}  // namespace gpufleet::sim

#include "core/cluster.h"

#include <algorithm>
#include <bit>
#include <string>

namespace gpufleet::core {

Result<bool> ValidateJobSpec(const JobSpec& job) {
  if (job.cpu_milli < 0) return Error{"cpu_milli must not be negative"};
  if (job.memory_mib < 0) return Error{"memory_mib must not be negative"};
  if (job.num_gpu < 0) return Error{"num_gpu must not be negative"};
  if (job.num_gpu > kMaxGpusPerNode) {
    return Error{"num_gpu " + std::to_string(job.num_gpu) + " exceeds the per-node maximum of " +
                 std::to_string(kMaxGpusPerNode)};
  }
  if (job.gpu_milli < 0 || job.gpu_milli > kGpuMilli) return Error{"gpu_milli must be in 0..1000"};
  if (job.num_gpu > 1 && job.gpu_milli != kGpuMilli && job.gpu_milli != 0) {
    return Error{"gpu_milli below 1000 is only allowed with num_gpu 1"};
  }
  if (job.num_gpu == 0 && job.gpu_milli != 0) return Error{"gpu_milli must be 0 when num_gpu is 0"};
  if (job.num_gpu > 0 && job.gpu_milli == 0)
    return Error{"gpu_milli must be positive when num_gpu > 0"};
  if (job.gang_nodes < 1) return Error{"gang_nodes must be at least 1"};
  return true;
}

Result<bool> ValidateNodeSpec(const NodeSpec& node) {
  if (node.cpu_milli < 0) return Error{"cpu_milli must not be negative"};
  if (node.memory_mib < 0) return Error{"memory_mib must not be negative"};
  if (node.num_gpus < 0 || node.num_gpus > kMaxGpusPerNode) {
    return Error{"gpu count must be in 0.." + std::to_string(kMaxGpusPerNode)};
  }
  return true;
}

const std::shared_ptr<const std::vector<NodeSpec>>& ClusterSnapshot::NoNodes() {
  // One empty list for every snapshot made without nodes (a plan's, before it is filled).
  static const auto* const none = new std::shared_ptr<const std::vector<NodeSpec>>(
      std::make_shared<const std::vector<NodeSpec>>());
  return *none;
}

ClusterSnapshot::ClusterSnapshot(std::vector<NodeSpec> nodes)
    : specs_(std::make_shared<const std::vector<NodeSpec>>(std::move(nodes))) {
  states_.resize(specs_->size());
  class_counts_.resize(specs_->size());
  for (size_t i = 0; i < specs_->size(); ++i) {
    const NodeSpec& spec = (*specs_)[i];
    GPUFLEET_CHECK(ValidateNodeSpec(spec).ok());
    NodeState& s = states_[i];
    s.cpu_free = spec.cpu_milli;
    s.memory_free = spec.memory_mib;
    s.num_gpus = static_cast<uint8_t>(spec.num_gpus);
    s.model = spec.model;
    for (int g = 0; g < spec.num_gpus; ++g) s.gpu_free[g] = kGpuMilli;
    Refresh(s);
    s.version = 1;
    total_gpu_milli_ += int64_t{spec.num_gpus} * kGpuMilli;
    max_node_gpus_ = std::max(max_node_gpus_, spec.num_gpus);
  }
}

ClusterSnapshot::ClusterSnapshot(const ClusterSnapshot& other)
    : specs_(other.specs_),
      states_(other.states_),
      class_counts_(other.class_counts_),
      links_(other.links_),
      total_gpu_milli_(other.total_gpu_milli_),
      used_gpu_milli_(other.used_gpu_milli_),
      free_whole_gpus_(other.free_whole_gpus_),
      max_node_gpus_(other.max_node_gpus_) {}

ClusterSnapshot& ClusterSnapshot::operator=(const ClusterSnapshot& other) {
  if (this != &other) {
    specs_ = other.specs_;
    states_ = other.states_;
    class_counts_ = other.class_counts_;
    journal_.clear();
    links_ = other.links_;
    total_gpu_milli_ = other.total_gpu_milli_;
    used_gpu_milli_ = other.used_gpu_milli_;
    free_whole_gpus_ = other.free_whole_gpus_;
    max_node_gpus_ = other.max_node_gpus_;
  }
  return *this;
}

Result<bool> ClusterSnapshot::SetGpuLinks(int node, GpuLinks links) {
  GPUFLEET_CHECK(node >= 0 && node < size());
  if (links.empty()) {
    if (node < static_cast<int>(links_.size())) links_[node].reset();
    return true;
  }
  if (links.num_gpus != (*specs_)[node].num_gpus) {
    return Error{"gpu_links: the table has " + std::to_string(links.num_gpus) + " GPUs, node " +
                     (*specs_)[node].name + " has " + std::to_string((*specs_)[node].num_gpus),
                 ErrorCode::kInvalid, "gpu_links"};
  }
  if (links_.empty()) links_.resize(specs_->size());
  links_[node] = std::make_shared<const GpuLinks>(std::move(links));
  return true;
}

void ClusterSnapshot::Refresh(NodeState& s) {
  free_whole_gpus_ -= s.full_free_gpus;
  s.gpu_free_total = 0;
  s.gpu_free_max = 0;
  s.full_free_gpus = 0;
  for (int g = 0; g < s.num_gpus; ++g) {
    s.gpu_free_total += s.gpu_free[g];
    if (s.gpu_free[g] > s.gpu_free_max) s.gpu_free_max = s.gpu_free[g];
    s.full_free_gpus += s.gpu_free[g] == kGpuMilli;
  }
  free_whole_gpus_ += s.full_free_gpus;
  ++s.version;
}

void ClusterSnapshot::Allocate(int node, const JobSpec& job, GpuMask gpus) {
  GPUFLEET_CHECK(node >= 0 && node < size());
  NodeState& s = states_[node];
  GPUFLEET_CHECK(job.cpu_milli <= s.cpu_free && job.memory_mib <= s.memory_free);
  const int want = job.UsesGpu() ? job.num_gpu : 0;
  GPUFLEET_CHECK(GpuCount(gpus) == want);
  GPUFLEET_CHECK(want == 0 || job.gpu_models.Contains(s.model));
  GPUFLEET_CHECK((gpus >> s.num_gpus) == 0);
  for (int g = 0; g < s.num_gpus; ++g) {
    if (!((gpus >> g) & 1u)) continue;
    GPUFLEET_CHECK(s.gpu_free[g] >= job.gpu_milli);
    s.gpu_free[g] -= job.gpu_milli;
  }
  s.cpu_free -= job.cpu_milli;
  s.memory_free -= job.memory_mib;
  used_gpu_milli_ += int64_t{want} * job.gpu_milli;
  if (uint32_t bit = JobClassBit(job)) {
    ++class_counts_[node][std::countr_zero(bit)];
    s.job_classes |= bit;
  }
  Refresh(s);
  journal_.push_back(node);
}

void ClusterSnapshot::Release(int node, const JobSpec& job, GpuMask gpus) {
  GPUFLEET_CHECK(node >= 0 && node < size());
  NodeState& s = states_[node];
  const NodeSpec& spec = (*specs_)[node];
  const int want = job.UsesGpu() ? job.num_gpu : 0;
  GPUFLEET_CHECK(GpuCount(gpus) == want);
  GPUFLEET_CHECK((gpus >> s.num_gpus) == 0);
  GPUFLEET_CHECK(s.cpu_free + job.cpu_milli <= spec.cpu_milli);
  GPUFLEET_CHECK(s.memory_free + job.memory_mib <= spec.memory_mib);
  for (int g = 0; g < s.num_gpus; ++g) {
    if (!((gpus >> g) & 1u)) continue;
    GPUFLEET_CHECK(s.gpu_free[g] + job.gpu_milli <= kGpuMilli);
    s.gpu_free[g] += job.gpu_milli;
  }
  s.cpu_free += job.cpu_milli;
  s.memory_free += job.memory_mib;
  used_gpu_milli_ -= int64_t{want} * job.gpu_milli;
  if (uint32_t bit = JobClassBit(job)) {
    auto& count = class_counts_[node][std::countr_zero(bit)];
    GPUFLEET_CHECK(count > 0);
    if (--count == 0) s.job_classes &= ~bit;
  }
  Refresh(s);
  journal_.push_back(node);
}

}  // namespace gpufleet::core

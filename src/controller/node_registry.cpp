#include "controller/node_registry.h"

#include <algorithm>

#include "core/gpu_catalog.h"

namespace gpufleet::controller {

core::NodeSpec NodeSpecOf(const std::string& name, int gpus, const std::string& model_name,
                          std::string* catalog_name, int64_t cpu_milli, int64_t memory_mib) {
  const core::GpuCatalog& catalog = core::GpuCatalog::Builtin();
  core::NodeSpec node;
  node.name = name;
  node.num_gpus = gpus;
  auto model = catalog.Find(model_name);
  if (!model) model = catalog.Find("G2");
  node.model = model.value_or(0);
  *catalog_name = catalog.model(node.model).name;
  // Unknown CPU and memory: room for any job.
  node.cpu_milli = cpu_milli > 0 ? cpu_milli : core::kUnreportedCpuMilli;
  node.memory_mib = memory_mib > 0 ? memory_mib : core::kUnreportedMemoryMib;
  return node;
}

NodeRegistry::NodeRegistry(std::string local_node, int64_t first_epoch)
    : local_node_(std::move(local_node)), next_epoch_(first_epoch) {}

int NodeRegistry::IndexOf(const std::string& name) {
  if (auto it = index_.find(name); it != index_.end()) return it->second;
  RegisteredNode entry;
  entry.name = entry.spec.name = name;
  entry.local = !local_node_.empty() && name == local_node_;
  entry.epoch = next_epoch_++;
  nodes_.push_back(std::move(entry));
  const int i = static_cast<int>(nodes_.size()) - 1;
  index_.emplace(name, i);
  return i;
}

bool NodeRegistry::Heard(int i, const net::Heartbeat& beat, bool busy, int64_t now_ms) {
  RegisteredNode& n = nodes_[i];
  bool changed = false;
  std::string catalog_name;
  const core::NodeSpec reported = NodeSpecOf(n.name, beat.gpus, beat.gpu_model, &catalog_name,
                                             beat.cpu_milli, beat.memory_mib);
  if (!n.known || (!busy && (n.spec.num_gpus != beat.gpus || n.model_name != catalog_name ||
                             n.spec.cpu_milli != reported.cpu_milli ||
                             n.spec.memory_mib != reported.memory_mib))) {
    n.spec = reported;
    n.model_name = catalog_name;
    n.known = true;
    changed = true;
  }
  if (!n.alive) {
    n.alive = true;
    n.alive_since_ms = now_ms;
    changed = true;
  }
  n.retired = false;
  n.pending_return = false;
  const std::string address = beat.address.empty() ? n.name : beat.address;
  if (address != n.address || n.simulated != beat.simulated) changed = true;
  n.address = address;
  n.simulated = beat.simulated;
  n.limits = beat.limits;
  n.limits_why = beat.limits_why;
  if (beat.images) n.images = *beat.images;
  n.last_seen_ms = now_ms;
  if (n.first_seen_ms == 0) n.first_seen_ms = now_ms;
  if (!beat.samples_json.empty()) n.samples_json = beat.samples_json;  // agents send it 1/s
  for (const net::GpuFigure& f : beat.figures) {
    if (f.index < 0 || f.index >= std::max(beat.gpus, 1)) continue;
    if (static_cast<int>(n.latest.size()) <= f.index) n.latest.resize(f.index + 1);
    n.latest[f.index] = {f.util_pct, f.mem_used_mib, f.mem_total_mib};
  }
  return changed;
}

void NodeRegistry::Lose(int i) {
  nodes_[i].alive = false;
  nodes_[i].pending_return = false;
  nodes_[i].epoch = next_epoch_++;
}

std::vector<int> NodeRegistry::PastLease(int64_t now_ms, int64_t lease_ms) const {
  std::vector<int> out;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const RegisteredNode& n = nodes_[i];
    if ((n.alive || n.pending_return) && n.last_seen_ms > 0 && now_ms - n.last_seen_ms > lease_ms) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

store::NodeRecord NodeRegistry::Record(int i, int64_t now_ms) const {
  const RegisteredNode& n = nodes_[i];
  store::NodeRecord record;
  record.name = n.name;
  record.address = n.address;
  record.gpus = n.spec.num_gpus;
  record.gpu_model = n.model_name;
  record.simulated = n.simulated;
  record.epoch = n.epoch;
  for (const auto& [g, d] : n.drains) record.drains.push_back(d);
  record.first_seen_ms = n.first_seen_ms;
  record.last_seen_ms = n.alive ? now_ms : n.last_seen_ms;
  record.state = n.alive ? "READY" : n.retired ? "RETIRED" : "LOST";
  return record;
}

void NodeRegistry::Restore(const store::NodeRecord& record, int64_t now_ms) {
  RegisteredNode& n = nodes_[IndexOf(record.name)];
  for (const store::GpuDrain& d : record.drains) n.drains[d.gpu] = d;
  n.spec = NodeSpecOf(record.name, record.gpus, record.gpu_model, &n.model_name);
  n.known = true;
  n.address = record.address;
  n.simulated = record.simulated;
  n.first_seen_ms = record.first_seen_ms;
  n.pending_return = record.state != "LOST" && record.state != "RETIRED";
  n.retired = record.state == "RETIRED";
  n.last_seen_ms = n.pending_return ? now_ms : 0;
}

std::vector<core::NodeSpec> NodeRegistry::KnownSpecs() const {
  std::vector<core::NodeSpec> out;
  for (const RegisteredNode& n : nodes_) {
    if (n.known) out.push_back(n.spec);
  }
  return out;
}

}  // namespace gpufleet::controller

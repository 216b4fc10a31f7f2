#pragma once
// `NodeRegistry`: the nodes a controller knows, by index (the cluster snapshot's node index,
// which never changes) and by name: each node's size and address as its agent last reported,
// its liveness (heard from within the lease, expected back after a restart, lost), its epoch,
// and what the controller keeps of it (drains, health verdicts, GPU links). No clock, lock or
// I/O of its own: the Controller calls it under its lock, with the time.
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/gpu_links.h"
#include "core/node.h"
#include "net/node_protocol.h"
#include "store/store.h"

namespace gpufleet::controller {

struct RegisteredNode {
  std::string name;
  std::string address;
  core::NodeSpec spec;
  std::string model_name;
  bool simulated = false;
  bool local = false;  // its agent runs in the controller's process (ControllerOptions)
  int held_beats = 0;  // its heartbeats the controller holds now (long poll): one at most
  std::string limits = "none", limits_why;
  std::vector<std::string> images;  // the container images it holds, as its agent last said
  bool alive = false;  // heard from within the lease
  bool known = false;  // its size is known (false: named by a recovered job only)
  // Known from before a controller restart and not heard from since: it has one lease to come
  // back (its jobs wait for it), then it is lost.
  bool pending_return = false;
  // The autoscaler retired it: its instance is deleted and its credentials revoked.
  bool retired = false;
  int64_t first_seen_ms = 0;
  // For idle time (the autoscaler's scale-down, `gpufleet nodes`): when it last became alive, and
  // when a rank last ran on it (the controller's pass stamps it).
  int64_t alive_since_ms = 0;
  int64_t last_busy_ms = 0;
  int64_t epoch = 0;  // bumped when declared lost
  int64_t last_seen_ms = 0;
  std::string samples_json;
  // Each GPU's latest figures, by index (-1: none yet).
  struct GpuFigures {
    double util_pct = -1;
    int64_t mem_used_mib = -1, mem_total_mib = -1;
  };
  std::vector<GpuFigures> latest;
  uint64_t version = 0;        // bumped when what this node should run changes (wakes its agent)
  int64_t last_figure_ms = 0;  // newest GPU figure counted into usage summaries
  // Draining (see NodeView::drained). `unhealthy`: the agent's latest verdict by GPU; `acked`:
  // the health reason an admin undrained, by GPU (placeable while it stays the same); `drains`:
  // admin drains (kept in the store); `held`: by drained GPU, the milli-GPUs of each blocker
  // the cluster snapshot holds on it, so that no placement takes what its jobs leave free.
  std::map<int, std::string> unhealthy;
  std::map<int, std::string> acked;
  // Health changes recorded in the audit log in the hour from `health_window_ms`, and those left
  // out past the cap (Controller: a node flapping its GPUs' health must not grow the log at will).
  int64_t health_window_ms = 0;
  int health_recorded = 0, health_left_out = 0;
  std::map<int, store::GpuDrain> drains;
  std::map<int, std::vector<int>> held;
  core::GpuLinks links;  // how its GPUs are connected, as its agent reported (may be empty)
};

// A node of `gpus` GPUs named `model_name` (unknown models: the generic one, whose catalog name
// goes to `catalog_name`), with `cpu_milli` and `memory_mib` as reported (0: unknown, room for
// any job).
core::NodeSpec NodeSpecOf(const std::string& name, int gpus, const std::string& model_name,
                          std::string* catalog_name, int64_t cpu_milli = 0,
                          int64_t memory_mib = 0);

class NodeRegistry {
 public:
  // `local_node`: the name only the controller's in-process agent may use ("" : none).
  // `first_epoch`: node epochs start here and only grow (across restarts too).
  NodeRegistry(std::string local_node, int64_t first_epoch);

  // The index of node `name`, adding an UNKNOWN entry (not alive, size unknown) when new.
  int IndexOf(const std::string& name);
  RegisteredNode& operator[](int i) { return nodes_[i]; }
  const RegisteredNode& operator[](int i) const { return nodes_[i]; }
  std::size_t size() const { return nodes_.size(); }
  auto begin() { return nodes_.begin(); }
  auto end() { return nodes_.end(); }
  auto begin() const { return nodes_.begin(); }
  auto end() const { return nodes_.end(); }

  // Takes what heartbeat `beat` says of node `i` at `now_ms`: alive again, its address, limits,
  // GPU document, and its size unless `busy` (ranks of running jobs hold it; a new size is taken
  // once they end). True when placement must see the node anew (its size or address changed,
  // or it was not alive).
  bool Heard(int i, const net::Heartbeat& beat, bool busy, int64_t now_ms);
  // Node `i` is lost: not alive, with a new epoch (what its agent still runs is fenced).
  void Lose(int i);
  // The nodes, alive or expected back, silent for more than `lease_ms` at `now_ms`.
  std::vector<int> PastLease(int64_t now_ms, int64_t lease_ms) const;
  // What the store keeps of node `i` (its registration, drains and state) at `now_ms`.
  store::NodeRecord Record(int i, int64_t now_ms) const;
  // Node `i` as the store recorded it before a restart: its size and drains; expected back
  // within a lease from `now_ms` unless it was LOST.
  void Restore(const store::NodeRecord& record, int64_t now_ms);
  // The sizes of the nodes whose size is known.
  std::vector<core::NodeSpec> KnownSpecs() const;

 private:
  std::string local_node_;
  int64_t next_epoch_;
  std::vector<RegisteredNode> nodes_;
  std::unordered_map<std::string, int> index_;
};

}  // namespace gpufleet::controller

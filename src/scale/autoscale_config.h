#pragma once
// What an autoscaler is told: the node groups it may create nodes in, its policy, and the
// provider that creates them. Read from the `--autoscale FILE.toml` file (`ParseAutoscaleToml`);
// pure, like the planner that uses it. File format (every key of a group is required unless
// marked optional):
//
//   [[groups]]
//   name = "a100-8"               # [a-z0-9-], at most 40 characters; unique
//   gpu_model = "A100-80GB"       # a GPU catalog name or alias
//   gpus = 8                      # 1..32 GPUs per node
//   cpu_cores = 96
//   memory_gib = 1152
//   price_per_hour = 32.77        # on-demand dollars per node-hour
//   spot_price_per_hour = 12.5    # optional; absent or 0: no spot capacity
//   min = 0                       # nodes kept however idle
//   max = 16                      # nodes at most (booting ones count)
//   boot_s = 180                  # from create to the agent's first heartbeat
//   priority = 0                  # optional: the `priority` expander takes higher first
//
//   [policy]                      # optional, and every key in it
//   scale_up_delay_s = 0          # a job waits this long before nodes are bought for it
//   scale_down_unneeded_s = 600   # an idle node unneeded this long is retired
//   max_spend_per_hour = 100.0    # never exceeded by the nodes the autoscaler holds
//   expander = "cheapest"         # "cheapest" | "least-waste" | "priority"
//   spot_fallback_s = 600         # a restartable job waits this long for spot, then on-demand
//   scan_interval_s = 10          # how often the controller runs a planning pass
//   consolidation = false         # move restartable jobs off under-used nodes to retire them
//   consolidation_min_saving_s = 600   # only with consolidation: a node is emptied when that
//                                 # saves at least this many seconds of its price, net of the
//                                 # moved jobs' restart cost
//
//   [provider]
//   kind = "exec"                 # "exec" | "local"
//   script = "/etc/gpufleet/cloud.sh"   # exec: run as `script create|delete|list ...`
//   timeout_s = 120               # optional; exec: a script call is killed after this
//   netns = false                 # optional; local: each agent in its own network namespace
//
// Unknown keys, wrong types and values out of range are errors naming the file, line and key.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/gpu_catalog.h"
#include "core/result.h"

namespace gpufleet::scale {

// One kind of node the autoscaler may buy: an instance type with its prices and limits.
struct NodeGroup {
  std::string name;
  core::ModelId model = 0;
  std::string model_name;  // as written in the file
  int gpus = 0;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  double price_per_hour = 0;
  double spot_price_per_hour = 0;  // 0: the group offers no spot capacity
  int min = 0;
  int max = 0;
  int64_t boot_s = 0;
  int priority = 0;
  bool HasSpot() const { return spot_price_per_hour > 0; }
  double Price(bool spot) const { return spot ? spot_price_per_hour : price_per_hour; }
};

// How the planner picks a group for the waiting jobs.
enum class Expander {
  kCheapest,    // lowest price per useful GPU-hour (price against the GPU's catalog speed)
  kLeastWaste,  // fewest GPUs left idle on the new nodes (cluster-autoscaler's least-waste)
  kPriority,    // highest group priority, then cheapest
};
std::string_view ExpanderName(Expander e);

struct ScalePolicy {
  int64_t scale_up_delay_s = 0;
  int64_t scale_down_unneeded_s = 600;
  double max_spend_per_hour = std::numeric_limits<double>::infinity();
  Expander expander = Expander::kCheapest;
  int64_t spot_fallback_s = 600;
  int64_t scan_interval_s = 10;
  // Consolidation (as Karpenter's): the restartable jobs of an under-used node are stopped with
  // their grace period (they checkpoint) and requeued onto other ready nodes' free room, and the
  // node is retired once empty, when its saved price beats the move's restart cost by
  // `consolidation_min_saving_s` seconds of that price.
  bool consolidation = false;
  int64_t consolidation_min_saving_s = 600;
};

// How many nodes of group `g` the fleet may ever hold, what submits and the scheduler count on
// (ControllerOptions::growth_nodes): its max, at most 256, and no more than `policy`'s spend cap
// buys at the group's cheapest price, spot included unless `spot` is false (what a job that is
// not restartable, never put on spot, may count on: ControllerOptions::growth_nodes_on_demand).
int GrowthNodeCount(const NodeGroup& g, const ScalePolicy& policy, bool spot = true);

struct ProviderConfig {
  std::string kind;    // "exec" or "local"
  std::string script;  // exec
  int64_t timeout_s = 120;
  bool netns = false;  // local
};

struct AutoscaleConfig {
  std::vector<NodeGroup> groups;
  ScalePolicy policy;
  ProviderConfig provider;
  // The index of the group called `name`, or -1.
  int FindGroup(std::string_view name) const;
};

// Parses the file's text; `origin` names it in errors. `require_provider`: the controller needs a
// [provider]; the simulator does not.
core::Result<AutoscaleConfig> ParseAutoscaleToml(std::string_view text, const std::string& origin,
                                                 const core::GpuCatalog& catalog,
                                                 bool require_provider);

// Whether `name` is a valid group or node name: 1..63 of [a-z0-9-], not starting with '-'.
bool ValidScaleName(std::string_view name);

}  // namespace gpufleet::scale

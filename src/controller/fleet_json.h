#pragma once
// The dashboard's view of nodes and GPUs, as `GET /v1/fleet` and the `node` events of
// `GET /v1/events` give it. Internal to src/controller.
#include <nlohmann/json.hpp>
#include <vector>

#include "controller/controller.h"
#include "store/store.h"

namespace gpufleet::controller {

// One node as `viewer` may see it: every GPU with its figures, health, drain and holder. The
// holding job's id is shown to admins and to its owner only; others see that the GPU is busy.
nlohmann::json FleetNodeJson(const NodeView& node, const store::UserRecord& viewer);
// The whole fleet with totals (GPUs allocated, GPUs busy by their utilization, mean utilization,
// the queue), for `viewer`.
nlohmann::json FleetJson(const std::vector<NodeView>& nodes, const ControllerStats& stats,
                         const store::UserRecord& viewer, int64_t now_ms);

}  // namespace gpufleet::controller

#pragma once
// The autoscaler's HTTP API and metrics (issue 14):
//   GET /v1/scale   the autoscaler's state (`gpufleet scale status`): provider, policy, spend
//                   against the cap, each group's nodes by state and backoff, each node, the
//                   latest events; the jobs it cannot serve (ids for admins, counts otherwise).
//                   404 when the controller runs without --autoscale.
#include <atomic>
#include <nlohmann/json.hpp>
#include <string>

#include "controller/autoscaler.h"
#include "net/http_server.h"

namespace gpufleet::controller {

// `autoscaler` is read on every request: set it (or leave it null) before the server serves.
void AddScaleRoutes(net::HttpServer& server, Controller& controller,
                    const std::atomic<const Autoscaler*>& autoscaler);

// GET /v1/scale's answer for an admin (`admin`) or another user: job ids, and what a failing
// provider or store said (cloud account, role and image names), are the admins' only.
nlohmann::json ScaleStatusJson(const Autoscaler& autoscaler, bool admin);

// The autoscaler's Prometheus metrics, in the text format.
std::string ScaleMetricsText(const Autoscaler& autoscaler);

}  // namespace gpufleet::controller

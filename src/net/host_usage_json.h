#pragma once
// A job's host usage (core/host_usage.h) as JSON, the same on the heartbeat and in the API:
// {"source": "cgroup-v1", "cpu_usage_us": 1200000, ..., "cpu_pressure_some_us": null,
//  "missing": ["cpu_pressure_some_us", ...]}; a figure its source did not give is null and listed
// in "missing". An unmeasured usage is null.
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/host_usage.h"

namespace gpufleet::net {

nlohmann::json HostUsageJson(const core::HostUsage& usage);
// Reads what HostUsageJson wrote (null: unmeasured; "missing" is ignored: it follows from the
// figures); throws InputFieldError naming `field`.KEY for a bad figure or source.
core::HostUsage ParseHostUsageJson(const nlohmann::json& value, std::string_view field);

}  // namespace gpufleet::net

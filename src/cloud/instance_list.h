#pragma once
// The replies of a provider script (exec_provider.h), parsed strictly: pure functions, fuzzed by
// fuzz/instance_list_fuzz.cpp. Every error names the field at fault ("instances[2].state: ...").
#include <string>
#include <string_view>
#include <vector>

#include "cloud/provider.h"
#include "core/result.h"

namespace gpufleet::cloud {

// Whether `name` may name an instance or a group: 1..63 of [a-z0-9-], not starting with '-'.
// The same rule as scale::ValidScaleName, kept here so that cloud/ needs only scale's structs;
// a name that passes is safe on a command line (no option, no shell character).
bool ValidInstanceName(std::string_view name);

// The reply of `SCRIPT list`:
//   {"instances": [{"name": "a100-8-1", "group": "a100-8", "spot": true, "state": "running",
//                   "interruption_at": 1767225600}]}
// `name`, `group` (valid names), `spot` (a boolean) and `state` ("pending", "running" or
// "stopping") are required; `interruption_at` (Unix seconds, an integer) is optional, absent or
// null meaning no notice. Unknown keys are errors (a misspelt `interruption_at` would otherwise
// hide a notice), as are two instances of one name and more than `kMaxInstances` instances.
inline constexpr std::size_t kMaxInstances = 10000;
core::Result<std::vector<Instance>> ParseInstanceList(std::string_view json);

// The reply of `SCRIPT create --name N`: empty (exit status 0 is enough), or {"name": "N"}
// where the name must be `name`.
core::Result<bool> CheckCreateReply(std::string_view reply, const std::string& name);

}  // namespace gpufleet::cloud

#pragma once
// The autoscaler's client command (issue 14): `gpufleet scale status [--json]`.
#include "cli/client_commands.h"

namespace gpufleet::cli {

// Prints GET /v1/scale: spend against the cap, each group's nodes by state and backoff, each
// node, and the latest events. Exit 1 when the controller cannot be reached or has no
// autoscaler.
int RunScaleStatus(const ClientOptions& options);

}  // namespace gpufleet::cli

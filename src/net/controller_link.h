#pragma once
// `ControllerLink`: how a node agent reaches its controller. The agent hands over one heartbeat
// and gets the controller's reply (node_protocol.h); what carries them is the link's business:
// HTTP(S) for an agent on another machine (agent/http_controller_link.h), a direct call for the
// node that `gpufleet up` runs in the controller's own process (controller/in_process_link.h).
// Both run the same agent, so a job runs the same way wherever it is placed.
#include <string>

#include "core/result.h"
#include "net/node_protocol.h"

namespace gpufleet::net {

class ControllerLink {
 public:
  virtual ~ControllerLink() = default;
  // Sends `beat` and returns the controller's reply. The controller may hold the reply up to
  // `beat.wait_ms` (a long poll). An error says, for the agent's log, why the controller could
  // not be reached or refused the heartbeat; the agent's jobs keep running either way.
  virtual core::Result<HeartbeatReply> Exchange(const Heartbeat& beat) = 0;
};

}  // namespace gpufleet::net

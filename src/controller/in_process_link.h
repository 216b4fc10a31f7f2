#pragma once
// `InProcessLink`: the link of the node agent that `gpufleet up` runs in the controller's own
// process. A heartbeat is a direct call of `Controller::Heartbeat`: no HTTP, no JSON, no token;
// otherwise that node is an agent like any other (net/controller_link.h).
#include "controller/controller.h"
#include "net/controller_link.h"

namespace gpufleet::controller {

class InProcessLink final : public net::ControllerLink {
 public:
  // `controller` must outlive the link.
  explicit InProcessLink(Controller& controller) : controller_(controller) {}
  core::Result<net::HeartbeatReply> Exchange(const net::Heartbeat& beat) override {
    auto reply = controller_.Heartbeat(beat, NowMs(), /*in_process=*/true);
    if (!reply) return core::Error{"the controller refused the heartbeat: " + reply.error()};
    return reply;
  }

 private:
  Controller& controller_;
};

}  // namespace gpufleet::controller

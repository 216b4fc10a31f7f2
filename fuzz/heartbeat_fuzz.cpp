// Fuzzes the agent's heartbeat as the controller parses it (net/node_protocol.h). A heartbeat
// that parses, written again with ToJson, parses again and writes the same text: nothing is lost
// or changed by a second trip.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "core/check.h"
#include "net/node_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  const std::string body(reinterpret_cast<const char*>(data), size);
  auto beat = net::ParseHeartbeat(body);
  if (!beat) return 0;
  const std::string once = net::ToJson(beat.value());
  auto again = net::ParseHeartbeat(once);
  if (!again) {
    std::fprintf(stderr, "re-parse failed: %s\n%s\n", again.error().c_str(), once.c_str());
    GPUFLEET_CHECK(again.ok());
  }
  GPUFLEET_CHECK(net::ToJson(again.value()) == once);
  return 0;
}

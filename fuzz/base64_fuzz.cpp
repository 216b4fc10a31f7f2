// Fuzzes Base64Decode (net/node_protocol.h; heartbeats carry log bytes in base64) and checks the
// round trips: any bytes encode and decode to themselves, and decoded text encodes to a text
// that decodes to the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/check.h"
#include "net/node_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::string encoded = net::Base64Encode(input);
  GPUFLEET_CHECK(encoded.size() == (input.size() + 2) / 3 * 4);
  auto decoded = net::Base64Decode(encoded);
  GPUFLEET_CHECK(decoded.ok() && decoded.value() == input);
  auto bytes = net::Base64Decode(input);
  if (!bytes) return 0;
  GPUFLEET_CHECK(bytes.value().size() <= input.size() / 4 * 3);
  auto back = net::Base64Decode(net::Base64Encode(bytes.value()));
  GPUFLEET_CHECK(back.ok() && back.value() == bytes.value());
  return 0;
}

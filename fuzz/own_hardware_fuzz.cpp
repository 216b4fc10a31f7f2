// Fuzzes the own-hardware cost model's parser (advise/own_hardware.h; the sizing advisor's
// `key = value` config file) and checks the round trip: a config that parses, written again with
// FormatOwnHardware, parses to an equal config and writes the same text.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "advise/own_hardware.h"
#include "core/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto config = advise::ParseOwnHardware(text);
  if (!config) return 0;
  const std::string once = advise::FormatOwnHardware(config.value());
  auto again = advise::ParseOwnHardware(once);
  if (!again) {
    std::fprintf(stderr, "re-parse failed: %s\n%s\n", again.error().c_str(), once.c_str());
    GPUFLEET_CHECK(again.ok());
  }
  GPUFLEET_CHECK(again.value() == config.value());
  GPUFLEET_CHECK(advise::FormatOwnHardware(again.value()) == once);
  return 0;
}

// Fuzzes the stored form of a job's usage series (advise/usage_series.h), which the controller
// reads back from the store (a damaged or hand-edited database must give an error, never a crash
// or an absurd allocation), and checks the round trip: bytes that decode, encoded again, decode
// to a series that encodes to the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "advise/usage_series.h"
#include "core/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto usage = advise::DecodeUsage(bytes);
  if (!usage) return 0;
  const std::string once = advise::EncodeUsage(usage.value());
  auto again = advise::DecodeUsage(once);
  GPUFLEET_CHECK(again.ok());
  GPUFLEET_CHECK(advise::EncodeUsage(again.value()) == once);
  GPUFLEET_CHECK(again.value().buckets.size() == usage.value().buckets.size());
  return 0;
}

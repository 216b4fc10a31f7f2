// Fuzzes the reply of a provider script's `list` (cloud/instance_list.h): whatever an
// administrator's script prints must give a list or an error naming the field, never a crash.
// Checks what a success promises: unique valid names and groups, a known state, and an
// interruption time that is not negative. `CheckCreateReply` gets the same bytes.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "cloud/instance_list.h"
#include "core/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)cloud::CheckCreateReply(text, "node-0");
  auto list = cloud::ParseInstanceList(text);
  if (!list) {
    GPUFLEET_CHECK(!list.error().empty());
    return 0;
  }
  std::set<std::string> names;
  for (const cloud::Instance& i : list.value()) {
    GPUFLEET_CHECK(cloud::ValidInstanceName(i.name));
    GPUFLEET_CHECK(cloud::ValidInstanceName(i.group));
    GPUFLEET_CHECK(names.insert(i.name).second);
    GPUFLEET_CHECK(i.state == "pending" || i.state == "running" || i.state == "stopping");
    GPUFLEET_CHECK(i.interruption_at_s >= 0);
  }
  return 0;
}

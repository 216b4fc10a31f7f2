// Fuzzes StatFieldsAfterName (core/proc_stat.h): /proc/PID/stat holds a name that the job's
// process chooses (prctl PR_SET_NAME). Checks that no field is empty or holds a separator, and
// that the fields are those after the text's last ')'.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/check.h"
#include "core/proc_stat.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto fields = core::StatFieldsAfterName(input);
  const std::size_t close = input.rfind(')');
  if (close == std::string::npos) {
    GPUFLEET_CHECK(fields.empty());
    return 0;
  }
  std::size_t bytes = 0;
  for (const std::string& f : fields) {
    GPUFLEET_CHECK(!f.empty());
    GPUFLEET_CHECK(f.find_first_of(" \n") == std::string::npos);
    GPUFLEET_CHECK(input.find(f, close + 1) != std::string::npos);
    bytes += f.size();
  }
  GPUFLEET_CHECK(bytes <= input.size() - close - 1);
  return 0;
}

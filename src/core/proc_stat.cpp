#include "core/proc_stat.h"

namespace gpufleet::core {

std::vector<std::string> StatFieldsAfterName(std::string_view stat) {
  std::vector<std::string> fields;
  const std::size_t close = stat.rfind(')');
  if (close == std::string_view::npos) return fields;
  std::size_t at = close + 1;
  while (at < stat.size()) {
    while (at < stat.size() && (stat[at] == ' ' || stat[at] == '\n')) ++at;
    const std::size_t end = stat.find_first_of(" \n", at);
    const std::size_t stop = end == std::string_view::npos ? stat.size() : end;
    if (stop > at) fields.emplace_back(stat.substr(at, stop - at));
    at = stop;
  }
  return fields;
}

}  // namespace gpufleet::core

#include "sim/published_results.h"

#include <charconv>
#include <cmath>

#include "sim/csv_table.h"

namespace gpufleet::sim {

using core::Error;
using core::Result;

std::string_view PolicyNameFromPublished(std::string_view sc_policy) {
  if (sc_policy == "01-Random") return "random";
  if (sc_policy == "02-DotProd") return "dotprod";
  if (sc_policy == "03-GpuClustering") return "gpuclustering";
  if (sc_policy == "04-GpuPacking") return "gpupacking";
  if (sc_policy == "05-BestFit") return "bestfit";
  if (sc_policy == "06-FGD") return "fgd";
  return "";
}

Result<std::vector<PublishedCurve>> ReadPublishedCurves(const std::string& path) {
  auto table = CsvTable::ReadFile(path, {"workload", "sc_policy", "seed", "0"});
  if (!table) return Error{table.error()};
  const CsvTable& t = table.value();
  std::vector<PublishedCurve> curves;
  for (size_t r = 0; r < t.rows(); ++r) {
    PublishedCurve c;
    c.workload = std::string(t.Field(r, "workload"));
    c.policy = std::string(PolicyNameFromPublished(t.Field(r, "sc_policy")));
    if (c.policy.empty()) {
      return Error{t.Where(r, "sc_policy") + ": unknown policy '" +
                   std::string(t.Field(r, "sc_policy")) + "'"};
    }
    auto seed = t.Int(r, "seed");
    if (!seed) return Error{seed.error()};
    c.seed = static_cast<int>(seed.value());
    for (int x = 0; t.HasColumn(std::to_string(x)); ++x) {
      const std::string column = std::to_string(x);
      std::string_view text = t.Field(r, column);
      double v = 0;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v)) {
        return Error{t.Where(r, column) + ": expected a number, found '" + std::string(text) + "'"};
      }
      c.values.push_back(v);
    }
    curves.push_back(std::move(c));
  }
  return curves;
}

}  // namespace gpufleet::sim

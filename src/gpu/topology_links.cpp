#include "gpu/topology_links.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace gpufleet::gpu {

core::GpuLinks LinksFromTopology(const GpuTopology& topology) {
  const std::size_t n = topology.common_ancestor.size();
  if (n < 2 || topology.nvlinks.size() != n) return {};
  std::vector<std::vector<int>> nvlinks(n, std::vector<int>(n, 0));
  std::vector<std::vector<int>> pcie(n, std::vector<int>(n, core::kMaxPcieClass));
  for (std::size_t a = 0; a < n; ++a) {
    if (topology.common_ancestor[a].size() != n || topology.nvlinks[a].size() != n) return {};
    for (std::size_t b = 0; b < n; ++b) {
      if (a == b) continue;
      // Symmetric by construction, even if a driver answered differently for (a,b) and (b,a).
      const int level = std::max(topology.common_ancestor[a][b], topology.common_ancestor[b][a]);
      pcie[a][b] = static_cast<int>(core::PcieClassFromNvmlLevel(
          topology.common_ancestor[a][b] < 0 || topology.common_ancestor[b][a] < 0 ? -1 : level));
      nvlinks[a][b] = std::clamp(std::min(topology.nvlinks[a][b], topology.nvlinks[b][a]), 0,
                                 core::kMaxNvLinksPerPair);
    }
  }
  core::Result<core::GpuLinks> links = core::MakeGpuLinks(nvlinks, pcie, static_cast<int>(n));
  return links.ok() ? std::move(links).value() : core::GpuLinks{};
}

}  // namespace gpufleet::gpu

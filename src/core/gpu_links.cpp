#include "core/gpu_links.h"

#include <string>

namespace gpufleet::core {

PcieClass PcieClassFromNvmlLevel(int level) {
  switch (level) {
    case 0:
      return PcieClass::kBoard;
    case 10:
      return PcieClass::kSwitch;
    case 20:
      return PcieClass::kMultiSwitch;
    case 30:
      return PcieClass::kHostBridge;
    case 40:
      return PcieClass::kSameSocket;
    default:
      return PcieClass::kCrossSocket;
  }
}

namespace {

std::string Cell(const char* matrix, size_t a, size_t b) {
  return std::string(matrix) + "[" + std::to_string(a) + "][" + std::to_string(b) + "]";
}

// Checks one matrix and copies it into `out` (row-major).
Result<bool> Fill(const std::vector<std::vector<int>>& m, const char* name, int num_gpus,
                  int max_value, std::vector<uint8_t>& out) {
  const auto n = static_cast<size_t>(num_gpus);
  if (m.size() != n) {
    return Error{std::string(name) + ": expected " + std::to_string(n) +
                 " rows (one per GPU), got " + std::to_string(m.size())};
  }
  out.assign(n * n, 0);
  for (size_t a = 0; a < n; ++a) {
    if (m[a].size() != n) {
      return Error{std::string(name) + "[" + std::to_string(a) + "]: expected " +
                   std::to_string(n) + " columns, got " + std::to_string(m[a].size())};
    }
    for (size_t b = 0; b < n; ++b) {
      const int v = m[a][b];
      if (v < 0 || v > max_value) {
        return Error{Cell(name, a, b) + ": " + std::to_string(v) + " is not in 0.." +
                     std::to_string(max_value)};
      }
      out[a * n + b] = static_cast<uint8_t>(v);
    }
  }
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) {
      if (m[a][b] != m[b][a]) {
        return Error{Cell(name, a, b) + " and " + Cell(name, b, a) + " differ"};
      }
    }
  }
  return true;
}

}  // namespace

Result<GpuLinks> MakeGpuLinks(const std::vector<std::vector<int>>& nvlinks,
                              const std::vector<std::vector<int>>& pcie, int num_gpus) {
  GpuLinks links;
  if (nvlinks.empty() && pcie.empty()) return links;
  if (num_gpus < 2) return Error{"a link table needs at least 2 GPUs"};
  if (auto r = Fill(nvlinks, "nvlinks", num_gpus, kMaxNvLinksPerPair, links.nvlinks); !r) {
    return r.failure();
  }
  if (auto r = Fill(pcie, "pcie", num_gpus, kMaxPcieClass, links.pcie); !r) return r.failure();
  for (int a = 0; a < num_gpus; ++a) {
    if (links.nvlinks[a * num_gpus + a] != 0) {
      return Error{Cell("nvlinks", a, a) + ": a GPU has no NVLink to itself (must be 0)"};
    }
    if (links.pcie[a * num_gpus + a] != kMaxPcieClass) {
      return Error{Cell("pcie", a, a) + ": a GPU is on its own board (must be " +
                   std::to_string(kMaxPcieClass) + ")"};
    }
  }
  links.num_gpus = num_gpus;
  return links;
}

namespace {
std::vector<std::vector<int>> Matrix(const std::vector<uint8_t>& cells, int n) {
  std::vector<std::vector<int>> m(n, std::vector<int>(n));
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) m[a][b] = cells[a * n + b];
  }
  return m;
}
}  // namespace

std::vector<std::vector<int>> NvLinkMatrix(const GpuLinks& links) {
  return Matrix(links.nvlinks, links.num_gpus);
}
std::vector<std::vector<int>> PcieMatrix(const GpuLinks& links) {
  return Matrix(links.pcie, links.num_gpus);
}

}  // namespace gpufleet::core

#pragma once
// `GpuLinks`: how well each pair of one node's GPUs is connected, in the compact form the
// scheduler reads. Two numbers per pair: how many NVLinks join the two GPUs directly or through
// an NVSwitch fabric, and how close they are in the PCIe tree. Filled from the agent's NVML
// reading (the heartbeat's `gpu_links`); a node without it is placed as if it had no topology.

#include <cstdint>
#include <vector>

#include "core/result.h"

namespace gpufleet::core {

// The PCIe path between two GPUs, nearest last, so that a larger value is a closer pair. The
// values follow nvmlGpuTopologyLevel_t in reverse (`PcieClassFromNvmlLevel`).
enum class PcieClass : uint8_t {
  kCrossSocket = 0,  // through the CPU interconnect (SYS)
  kSameSocket = 1,   // one NUMA node, different host bridges (NODE)
  kHostBridge = 2,   // one host bridge (PHB)
  kMultiSwitch = 3,  // several PCIe switches, no host bridge (PXB)
  kSwitch = 4,       // one PCIe switch (PIX)
  kBoard = 5,        // one board (a dual-GPU card)
};
inline constexpr int kMaxPcieClass = 5;
// The most NVLinks one pair may report: NVML_NVLINK_MAX_LINKS is 18 per GPU today.
inline constexpr int kMaxNvLinksPerPair = 64;

// Maps an NVML common-ancestor level (0 board, 10 one switch, 20 several switches, 30 host
// bridge, 40 NUMA node, 50 system) to a class; unknown levels count as across sockets.
PcieClass PcieClassFromNvmlLevel(int level);

struct GpuLinks {
  int num_gpus = 0;
  std::vector<uint8_t> nvlinks;  // num_gpus squared, row-major, symmetric, 0 on the diagonal
  std::vector<uint8_t> pcie;     // PcieClass values, idem (diagonal kBoard)

  bool empty() const { return num_gpus == 0; }
  int NvLinks(int a, int b) const { return nvlinks[a * num_gpus + b]; }
  int Pcie(int a, int b) const { return pcie[a * num_gpus + b]; }
  bool operator==(const GpuLinks&) const = default;
};

// Builds and checks a link table from its two matrices: both square with `num_gpus` rows,
// symmetric, NVLink counts in 0..kMaxNvLinksPerPair with 0 on the diagonal, PCIe classes in
// 0..kMaxPcieClass with kMaxPcieClass (one board) on the diagonal. Errors say which matrix and cell
// is wrong, without a field prefix (the caller names the field). Two empty matrices give an empty
// table.
Result<GpuLinks> MakeGpuLinks(const std::vector<std::vector<int>>& nvlinks,
                              const std::vector<std::vector<int>>& pcie, int num_gpus);

// The two matrices back, for serializing.
std::vector<std::vector<int>> NvLinkMatrix(const GpuLinks& links);
std::vector<std::vector<int>> PcieMatrix(const GpuLinks& links);

}  // namespace gpufleet::core

#include "testing/gpu_topologies.h"

#include <vector>

namespace gpufleet::test {
namespace {

using Matrix = std::vector<std::vector<int>>;

// PCIe classes for 8 GPUs in pairs under `pair_class`, four per socket, other pairs of one
// socket `socket_class`.
Matrix PairsAndSockets(core::PcieClass pair_class, core::PcieClass socket_class) {
  Matrix m(8, std::vector<int>(8));
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      core::PcieClass c = core::PcieClass::kCrossSocket;
      if (a == b) {
        c = core::PcieClass::kBoard;
      } else if (a / 2 == b / 2) {
        c = pair_class;
      } else if (a / 4 == b / 4) {
        c = socket_class;
      }
      m[a][b] = static_cast<int>(c);
    }
  }
  return m;
}

core::GpuLinks Make(const Matrix& nvlinks, const Matrix& pcie) {
  return core::MakeGpuLinks(nvlinks, pcie, static_cast<int>(pcie.size())).value();
}

}  // namespace

core::GpuLinks Dgx1V100Links() {
  const Matrix nvlinks = {
      {0, 1, 1, 2, 2, 0, 0, 0},  //
      {1, 0, 2, 1, 0, 2, 0, 0},  //
      {1, 2, 0, 2, 0, 0, 1, 0},  //
      {2, 1, 2, 0, 0, 0, 0, 1},  //
      {2, 0, 0, 0, 0, 1, 1, 2},  //
      {0, 2, 0, 0, 1, 0, 2, 1},  //
      {0, 0, 1, 0, 1, 2, 0, 2},  //
      {0, 0, 0, 1, 2, 1, 2, 0},  //
  };
  return Make(nvlinks, PairsAndSockets(core::PcieClass::kSwitch, core::PcieClass::kHostBridge));
}

core::GpuLinks PcieTwoSocketLinks() {
  return Make(Matrix(8, std::vector<int>(8, 0)),
              PairsAndSockets(core::PcieClass::kSwitch, core::PcieClass::kSameSocket));
}

core::GpuLinks HgxA100NvSwitchLinks() {
  Matrix nvlinks(8, std::vector<int>(8, 12));
  for (int a = 0; a < 8; ++a) nvlinks[a][a] = 0;
  return Make(nvlinks,
              PairsAndSockets(core::PcieClass::kMultiSwitch, core::PcieClass::kSameSocket));
}

}  // namespace gpufleet::test

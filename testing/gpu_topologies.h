#pragma once
// Link tables of three real 8-GPU machines, for placement tests and the gpuallocator comparison.
// The same machines are played by the fake NVML scenarios in tests/fake_nvml/scenarios/, and the
// probe test checks that reading those scenarios gives these tables.
#include <initializer_list>

#include "core/gpu_links.h"
#include "core/node.h"

namespace gpufleet::test {

// DGX-1 with V100 (hybrid cube-mesh): six NVLinks per GPU, to four peers, one or two links per
// pair (the layout `nvidia-smi topo -m` prints on a DGX-1V). Two fully linked quads, {0,1,2,3}
// and {4,5,6,7}, joined by the links 0-4, 1-5, 2-6, 3-7. PCIe: GPU pairs (0,1), (2,3), (4,5),
// (6,7) share a PCIe switch, other pairs of one socket a host bridge; GPUs 0-3 are on socket 0,
// 4-7 on socket 1. (The same layout as go-gpuallocator's DGX-1 Volta test node.)
core::GpuLinks Dgx1V100Links();

// An 8-GPU PCIe server without NVLink: two sockets, two PCIe switches per socket, two GPUs per
// switch (GPUs 0,1 | 2,3 on socket 0; 4,5 | 6,7 on socket 1).
core::GpuLinks PcieTwoSocketLinks();

// HGX A100 8-GPU: every GPU has 12 NVLinks into the NVSwitch fabric, so every pair counts 12;
// PCIe as on a DGX A100: pairs (0,1), (2,3), (4,5), (6,7) under one switch tree (several
// switches), GPUs 0-3 on socket 0 and 4-7 on socket 1.
core::GpuLinks HgxA100NvSwitchLinks();

// The mask of the GPUs listed.
inline core::GpuMask Gpus(std::initializer_list<int> list) {
  core::GpuMask m = 0;
  for (int g : list) m |= core::GpuMask{1} << g;
  return m;
}

}  // namespace gpufleet::test

// Topology-aware GPU selection against NVIDIA's gpuallocator "best effort" policy (our own
// re-implementation, testing/gpuallocator_besteffort.h): on three real 8-GPU machines, for every
// free-GPU mask and job sizes 2, 3 and 4, how often both choose the same set, how often the sets
// are equally good by gpuallocator's own score, and who leaves the better GPUs free for the next
// job. Prints the Markdown tables of bench/results/topology.md.
//
//   build/bench/topology_compare [--examples N]
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "sched/gpu_topology.h"
#include "testing/gpu_topologies.h"
#include "testing/gpuallocator_besteffort.h"

namespace gpufleet {
namespace {

using core::GpuMask;
using Key = std::tuple<int, int, int>;

Key KeyOf(const core::GpuLinks& links, GpuMask set) {
  const sched::SetConnection c = sched::ConnectionOf(links, set);
  return {c.min_class, c.nvlinks, c.class_sum};
}

// The best set (by connection) a next job of 4, then 2 GPUs would find among `rest`.
std::tuple<Key, Key> LeftForNext(const core::GpuLinks& links, GpuMask rest) {
  Key best4{-1, -1, -1}, best2{-1, -1, -1};
  for (GpuMask m = rest; m != 0; m = (m - 1) & rest) {
    const int n = std::popcount(m);
    if (n == 4) best4 = std::max(best4, KeyOf(links, m));
    if (n == 2) best2 = std::max(best2, KeyOf(links, m));
  }
  return {best4, best2};
}

std::string Set(GpuMask m) {
  std::string s = "{";
  for (int g = 0; g < 32; ++g) {
    if ((m >> g) & 1u) s += (s.size() > 1 ? "," : "") + std::to_string(g);
  }
  return s + "}";
}

std::string Pct(int part, int whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%d (%.1f%%)", part, whole ? 100.0 * part / whole : 0.0);
  return buf;
}

struct Machine {
  const char* name;
  core::GpuLinks links;
  bool sees_nvswitch_links;
};

}  // namespace
}  // namespace gpufleet

int main(int argc, char** argv) {
  using namespace gpufleet;
  int examples = 2;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--examples") == 0 && i + 1 < argc) examples = std::atoi(argv[++i]);
  }
  const std::vector<Machine> machines = {
      {"DGX-1 V100 (hybrid cube-mesh)", test::Dgx1V100Links(), true},
      {"PCIe, 2 sockets x 2 switches", test::PcieTwoSocketLinks(), true},
      {"HGX A100 NVSwitch", test::HgxA100NvSwitchLinks(), false},
      {"HGX A100 NVSwitch, links made visible", test::HgxA100NvSwitchLinks(), true},
  };
  std::printf(
      "| machine | GPUs | cases | same set | equal gpuallocator score | gpuallocator score "
      "higher for ours / theirs | ours better connected (keys 1-3) / worse | next job better "
      "off after ours / theirs |\n|---|---|---|---|---|---|---|---|\n");
  std::vector<std::string> notes;
  for (const Machine& m : machines) {
    const test::GpuAllocatorView view{&m.links, m.sees_nvswitch_links};
    for (int count = 2; count <= 4; ++count) {
      int cases = 0, same = 0, equal_score = 0, ours_higher = 0, theirs_higher = 0;
      int ours_better = 0, ours_worse = 0, next_ours = 0, next_theirs = 0, shown = 0;
      for (GpuMask free = 0; free < (1u << m.links.num_gpus); ++free) {
        if (std::popcount(free) < count) continue;
        ++cases;
        const GpuMask ours = sched::PickConnectedGpus(m.links, free, count);
        const GpuMask theirs = test::GpuAllocatorBestEffort(view, free, count);
        const int so = test::GpuAllocatorSetScore(view, ours);
        const int st = test::GpuAllocatorSetScore(view, theirs);
        same += ours == theirs;
        equal_score += so == st;
        ours_higher += so > st;
        theirs_higher += so < st;
        const Key ko = KeyOf(m.links, ours), kt = KeyOf(m.links, theirs);
        ours_better += ko > kt;
        ours_worse += ko < kt;
        const auto lo = LeftForNext(m.links, free & ~ours);
        const auto lt = LeftForNext(m.links, free & ~theirs);
        next_ours += lo > lt;
        next_theirs += lo < lt;
        if (ours != theirs && shown < examples && (so != st || lo != lt)) {
          ++shown;
          char line[512];
          std::snprintf(line, sizeof line,
                        "- %s, %d GPUs, free %s: ours %s (gpuallocator score %d, leaves %s), "
                        "gpuallocator %s (score %d, leaves %s)",
                        m.name, count, Set(free).c_str(), Set(ours).c_str(), so,
                        Set(free & ~ours).c_str(), Set(theirs).c_str(), st,
                        Set(free & ~theirs).c_str());
          notes.push_back(line);
        }
      }
      std::printf("| %s | %d | %d | %s | %s | %d / %d | %d / %d | %d / %d |\n", m.name, count,
                  cases, Pct(same, cases).c_str(), Pct(equal_score, cases).c_str(), ours_higher,
                  theirs_higher, ours_better, ours_worse, next_ours, next_theirs);
    }
  }
  std::printf("\nExamples where the choices differ and it matters to one of the scores:\n\n");
  for (const std::string& n : notes) std::printf("%s\n", n.c_str());
  return 0;
}

// Our re-implementation of gpuallocator's best-effort policy (testing/gpuallocator_besteffort.h)
// against the choices its own tests publish for a DGX-1 Volta, and our topology-aware pick
// against it on the three machines of bench/results/topology.md.
#include <gtest/gtest.h>

#include <bit>

#include "sched/gpu_topology.h"
#include "testing/gpu_topologies.h"
#include "testing/gpuallocator_besteffort.h"

namespace gpufleet {
namespace {

using core::GpuMask;

using test::Gpus;

TEST(GpuAllocatorBestEffort, ReproducesThePublishedDgx1VoltaChoices) {
  const core::GpuLinks links = test::Dgx1V100Links();
  const test::GpuAllocatorView view{&links, true};
  EXPECT_EQ(test::GpuAllocatorBestEffort(view, Gpus({0, 2, 4, 5}), 2), Gpus({4, 5}));
  EXPECT_EQ(test::GpuAllocatorBestEffort(view, Gpus({0, 4, 5, 6}), 2), Gpus({5, 6}));
  EXPECT_EQ(test::GpuAllocatorBestEffort(view, Gpus({0, 1, 3}), 2), Gpus({0, 3}));
  EXPECT_EQ(test::GpuAllocatorBestEffort(view, Gpus({0, 1, 4}), 2), Gpus({0, 4}));
  // One allocation after another on an idle node.
  GpuMask free = 0xFF;
  for (GpuMask want : {Gpus({0, 3}), Gpus({1, 2}), Gpus({4, 7}), Gpus({5, 6})}) {
    const GpuMask got = test::GpuAllocatorBestEffort(view, free, 2);
    EXPECT_EQ(got, want);
    free &= ~got;
  }
  free = 0xFF;
  for (GpuMask want : {Gpus({0, 1, 2, 3}), Gpus({4, 5, 6, 7})}) {
    const GpuMask got = test::GpuAllocatorBestEffort(view, free, 4);
    EXPECT_EQ(got, want);
    free &= ~got;
  }
  EXPECT_EQ(test::GpuAllocatorBestEffort(view, 0xFF, 8), GpuMask{0xFF});
}

// Whatever gpuallocator picks, ours is at least as well connected by our own keys 1-3 (it
// maximizes them), and on most free masks both pick the very same set.
TEST(GpuAllocatorBestEffort, OursIsNeverLessConnectedAndMostlyAgrees) {
  const struct {
    core::GpuLinks links;
    bool sees_nvswitch;
  } machines[] = {{test::Dgx1V100Links(), true},
                  {test::PcieTwoSocketLinks(), true},
                  {test::HgxA100NvSwitchLinks(), false}};
  for (const auto& m : machines) {
    const test::GpuAllocatorView view{&m.links, m.sees_nvswitch};
    for (int count = 2; count <= 4; ++count) {
      int cases = 0, same = 0;
      for (GpuMask free = 0; free <= 0xFF; ++free) {
        if (std::popcount(free) < count) continue;
        ++cases;
        const GpuMask ours = sched::PickConnectedGpus(m.links, free, count);
        const GpuMask theirs = test::GpuAllocatorBestEffort(view, free, count);
        ASSERT_EQ(std::popcount(theirs), count);
        const sched::SetConnection a = sched::ConnectionOf(m.links, ours);
        const sched::SetConnection b = sched::ConnectionOf(m.links, theirs);
        EXPECT_GE(std::tie(a.min_class, a.nvlinks, a.class_sum),
                  std::tie(b.min_class, b.nvlinks, b.class_sum))
            << "free " << free << " count " << count;
        same += ours == theirs;
      }
      EXPECT_GE(same * 100, cases * 75) << "count " << count << ": " << same << "/" << cases;
    }
  }
}

}  // namespace
}  // namespace gpufleet

// GpuHistory: a GPU's recent samples, bounded whatever times a node sends.
#include "controller/gpu_history.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace gpufleet::controller {
namespace {

TEST(GpuHistory, KeepsOneSampleAStepAndForgetsThoseOlderThanItKeeps) {
  GpuHistory history(/*step_ms=*/1000, /*keep_ms=*/10'000);
  for (int64_t t = 0; t <= 30'000; t += 500) history.Add("a", 0, t, 50, 100);
  const GpuHistory::Series s = history.Get("a", 0, 0, 0);
  ASSERT_FALSE(s.t_ms.empty());
  EXPECT_EQ(s.t_ms.back(), 30'000);
  EXPECT_EQ(s.t_ms.front(), 20'000);
  EXPECT_EQ(s.t_ms.size(), 11u);
}

// Found by a review: a sample at the largest time made `last + step` overflow, so every later
// sample was kept and none was ever forgotten: a node could grow the controller without bound.
TEST(GpuHistory, SamplesAtTheLargestTimeDoNotPileUp) {
  GpuHistory history(1000, 10'000);
  const int64_t last = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < 1000; ++i) history.Add("a", 0, last, 50, 100);
  EXPECT_EQ(history.Get("a", 0, 0, 0).t_ms.size(), 1u);
}

}  // namespace
}  // namespace gpufleet::controller

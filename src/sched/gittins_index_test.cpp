#include "sched/gittins_index.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"

namespace gpufleet::sched {
namespace {

TEST(GittinsIndex, HeavyTailFallsAsServiceIsAttained) {
  // Most jobs need 10 GPU-minutes, a few 100 GPU-hours: a job that outlived the short mode is
  // likely long, so its index drops and newcomers go first (least attained service).
  GittinsIndex g;
  for (int i = 0; i < 900; ++i) g.Observe(600);
  for (int i = 0; i < 100; ++i) g.Observe(360000);
  g.Rebuild();
  EXPECT_GT(g.Index(0), 10 * g.Index(3600));
  EXPECT_LT(g.Class(0), g.Class(3600));
  // Past the short mode the class changes again only near the long mode.
  EXPECT_GT(g.NextClassChange(0), 0);
  EXPECT_LE(g.NextClassChange(0), 1200);
}

TEST(GittinsIndex, NarrowServiceRisesTowardsTheEnd) {
  // Every job needs about 2 GPU-hours: one that has run 1.9 hours is nearly done and must not be
  // preempted by a newcomer (its class is at least as high).
  GittinsIndex g;
  core::Rng rng(3);
  for (int i = 0; i < 2000; ++i) g.Observe(7200 * (0.95 + 0.1 * rng.Uniform()));
  g.Rebuild();
  EXPECT_GT(g.Index(6800), g.Index(0));
  EXPECT_LE(g.Class(6800), g.Class(0));
}

TEST(GittinsIndex, PriorBeforeAnyJobFinishedIsLeastAttainedServiceFirst) {
  GittinsIndex g;
  EXPECT_EQ(g.observed(), 0);
  EXPECT_GT(g.Index(0), g.Index(3600));
  EXPECT_GT(g.Index(3600), g.Index(360000));
}

TEST(GittinsIndex, IgnoresNonsense) {
  GittinsIndex g;
  g.Observe(-5);
  g.Observe(0);
  g.Observe(std::nan(""));
  g.Observe(HUGE_VAL);
  EXPECT_EQ(g.observed(), 0);
  g.Observe(1e30);  // beyond the last bin: counted there
  g.Rebuild();
  EXPECT_EQ(g.observed(), 1);
  EXPECT_TRUE(std::isfinite(g.Index(1e30)));
  EXPECT_GE(g.Class(1e30), 0);
}

TEST(GittinsIndex, NextClassChangeIsWhereTheClassChanges) {
  GittinsIndex g;
  for (int i = 0; i < 500; ++i) g.Observe(300);
  for (int i = 0; i < 500; ++i) g.Observe(30000);
  g.Rebuild();
  double a = 0;
  for (int steps = 0; steps < 200 && std::isfinite(a); ++steps) {
    const double next = g.NextClassChange(a);
    if (!std::isfinite(next)) break;
    ASSERT_GT(next, a);
    EXPECT_EQ(g.Class(a), g.Class(std::nextafter(next, 0.0))) << a;
    EXPECT_NE(g.Class(a), g.Class(next)) << a;
    a = next;
  }
}

}  // namespace
}  // namespace gpufleet::sched

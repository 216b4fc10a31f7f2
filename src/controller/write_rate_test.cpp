#include "controller/write_rate.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpufleet::controller {
namespace {

TEST(WriteRateLimiter, ABurstIsAdmittedThenTheRateHolds) {
  WriteRateLimiter limiter(10, 5);  // 10 a second, 5 at once
  for (int i = 0; i < 5; ++i) EXPECT_EQ(limiter.Take("alice", 1000), 0) << i;
  const int64_t wait = limiter.Take("alice", 1000);
  EXPECT_EQ(wait, 100);  // one token takes 100 ms at 10/s
  EXPECT_EQ(limiter.Take("alice", 1000), 100) << "a refused request takes nothing";
  EXPECT_EQ(limiter.Take("alice", 1050), 50);
  EXPECT_EQ(limiter.Take("alice", 1100), 0);
  // Over a long run the admitted count follows the rate, not the number of tries.
  int admitted = 0;
  for (int64_t t = 2000; t < 12000; t += 5) admitted += limiter.Take("alice", t) == 0;
  EXPECT_GE(admitted, 100);
  EXPECT_LE(admitted, 106);  // 10 s at 10/s, plus what refilled (at most the burst)
}

TEST(WriteRateLimiter, UsersHaveTheirOwnBuckets) {
  WriteRateLimiter limiter(1, 2);
  EXPECT_EQ(limiter.Take("alice", 0), 0);
  EXPECT_EQ(limiter.Take("alice", 0), 0);
  EXPECT_GT(limiter.Take("alice", 0), 0);
  EXPECT_EQ(limiter.Take("bob", 0), 0);  // alice's loop costs bob nothing
  EXPECT_EQ(limiter.Take("bob", 0), 0);
}

TEST(WriteRateLimiter, ABackwardClockRefillsNothingAndOffAdmitsAll) {
  WriteRateLimiter limiter(1, 1);
  EXPECT_EQ(limiter.Take("alice", 10000), 0);
  EXPECT_GT(limiter.Take("alice", 5000), 0);
  EXPECT_GT(limiter.Take("alice", 10000), 0);
  EXPECT_EQ(limiter.Take("alice", 11000), 0);
  // Rates too small to wait for, or not numbers, are held to the smallest or turned off.
  WriteRateLimiter tiny(1e-20, 1);
  EXPECT_EQ(tiny.Take("alice", 0), 0);
  EXPECT_EQ(tiny.Take("alice", 0), 1'000'000);  // one request takes 1,000 s at 0.001/s
  WriteRateLimiter nan(std::nan(""), 1);
  EXPECT_FALSE(nan.enabled());
  WriteRateLimiter off(0, 1);
  EXPECT_FALSE(off.enabled());
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(off.Take("alice", 0), 0);
  EXPECT_EQ(off.buckets(), 0U);
}

TEST(WriteRateLimiter, BucketsThatRefilledAreDropped) {
  WriteRateLimiter limiter(10, 10);  // full again one second after the last take
  for (int u = 0; u < 1000; ++u) limiter.Take("user" + std::to_string(u), 0);
  EXPECT_EQ(limiter.buckets(), 1000U);
  limiter.Take("late", 61000);
  EXPECT_EQ(limiter.buckets(), 1U);
  // A dropped bucket comes back full: nobody is refused for having been forgotten.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(limiter.Take("user1", 61000), 0);
}

}  // namespace
}  // namespace gpufleet::controller

#include "controller/token_guard.h"

#include <gtest/gtest.h>

#include <string>

namespace gpufleet::controller {
namespace {

// Spends `n` unknown tokens from `address` at `now_ms`; returns how many were let through.
int SpendUnknown(UnknownTokenGuard& guard, const std::string& address, int n, int64_t now_ms) {
  int let = 0;
  for (int i = 0; i < n; ++i) {
    const std::string sha =
        "bogus-" + address + "-" + std::to_string(now_ms) + "-" + std::to_string(i);
    if (!guard.MayLookUp(address, sha, now_ms)) continue;
    ++let;
    guard.Unknown(address, sha, now_ms);
  }
  return let;
}

TEST(UnknownTokenGuardTest, AnAddressGetsItsBurstThenOnePerRefill) {
  UnknownTokenGuard guard;
  EXPECT_EQ(SpendUnknown(guard, "10.0.0.1", 100, 1000), UnknownTokenGuard::kBurst);
  EXPECT_EQ(guard.refused(), 100 - UnknownTokenGuard::kBurst);
  int retry_after_s = 0;
  EXPECT_FALSE(guard.MayLookUp("10.0.0.1", "another", 1000, &retry_after_s));
  EXPECT_EQ(retry_after_s, 1);
  // Five refills later, five more.
  EXPECT_EQ(SpendUnknown(guard, "10.0.0.1", 100, 1000 + 5 * UnknownTokenGuard::kRefillMs), 5);
  // Other addresses are untouched.
  EXPECT_EQ(SpendUnknown(guard, "10.0.0.2", 100, 1000), UnknownTokenGuard::kBurst);
  // A clock that steps back neither refills nor breaks the bucket.
  EXPECT_EQ(SpendUnknown(guard, "10.0.0.1", 10, 0), 0);
}

TEST(UnknownTokenGuardTest, ATokenAcceptedBeforeIsStillLookedUpDuringALockout) {
  UnknownTokenGuard guard;
  guard.Accepted("good", 500);
  EXPECT_EQ(SpendUnknown(guard, "10.0.0.1", 100, 1000), UnknownTokenGuard::kBurst);
  EXPECT_TRUE(guard.MayLookUp("10.0.0.1", "good", 1000));
  EXPECT_FALSE(guard.MayLookUp("10.0.0.1", "never-seen", 1000));
  // Revoked since: the store no longer knows it, so it is no longer let through.
  guard.Unknown("10.0.0.1", "good", 1000);
  EXPECT_FALSE(guard.MayLookUp("10.0.0.1", "good", 1000));
  // Accepted an hour ago or more: no longer remembered.
  guard.Accepted("old", 1000);
  const int64_t later_ms = 1000 + UnknownTokenGuard::kAcceptedMemoryMs;
  EXPECT_EQ(SpendUnknown(guard, "10.0.0.1", 100, later_ms), UnknownTokenGuard::kBurst);
  EXPECT_FALSE(guard.MayLookUp("10.0.0.1", "old", later_ms));
}

TEST(UnknownTokenGuardTest, ManyAddressesShareOneBucketPastTheTable) {
  UnknownTokenGuard guard;
  // Fill the table with addresses that each spent one lookup (not full, so not forgotten).
  for (std::size_t i = 0; i < UnknownTokenGuard::kMaxAddresses; ++i) {
    const std::string address = "a" + std::to_string(i);
    ASSERT_TRUE(guard.MayLookUp(address, "x", 0));
    guard.Unknown(address, "x", 0);
  }
  // New addresses now share one bucket: together they get one burst, not one each.
  int let = 0;
  for (int i = 0; i < 100; ++i) let += SpendUnknown(guard, "new" + std::to_string(i), 1, 0);
  EXPECT_EQ(let, UnknownTokenGuard::kBurst);
  // Once the tracked addresses' buckets have refilled they are forgotten, and a new address gets
  // a bucket of its own again.
  EXPECT_EQ(SpendUnknown(guard, "later", 100, 10 * UnknownTokenGuard::kRefillMs),
            UnknownTokenGuard::kBurst);
}

TEST(UnknownTokenGuardTest, TheAcceptedTableStaysBounded) {
  UnknownTokenGuard guard;
  for (std::size_t i = 0; i <= UnknownTokenGuard::kMaxAccepted; ++i) {
    guard.Accepted("t" + std::to_string(i), 0);
  }
  // Full of live tokens, it started over: the newest is remembered, the first is not.
  EXPECT_EQ(SpendUnknown(guard, "10.0.0.1", 100, 0), UnknownTokenGuard::kBurst);
  EXPECT_TRUE(
      guard.MayLookUp("10.0.0.1", "t" + std::to_string(UnknownTokenGuard::kMaxAccepted), 0));
  EXPECT_FALSE(guard.MayLookUp("10.0.0.1", "t0", 0));
}

}  // namespace
}  // namespace gpufleet::controller

#include "sched/flat_interner.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace gpufleet::sched {
namespace {

struct Pair {
  int64_t a, b;
  bool operator==(const Pair&) const = default;
};
// A deliberately poor hash: many keys share a home slot and a tag, so probing and the key
// comparison behind a matching tag are exercised, not only the easy path.
struct CollidingHash {
  size_t operator()(const Pair& p) const { return static_cast<size_t>(p.a % 7); }
};
struct GoodHash {
  size_t operator()(const Pair& p) const {
    return std::hash<int64_t>{}(p.a) * 0x9e3779b97f4a7c15ULL ^ std::hash<int64_t>{}(p.b);
  }
};

template <typename Hash>
void CheckAgainstMap(int keys, int draws) {
  FlatInterner<Pair, Hash> interner;
  std::map<std::pair<int64_t, int64_t>, uint32_t> expected;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> value(0, keys);
  for (int i = 0; i < draws; ++i) {
    const Pair key{value(rng), value(rng) % 13};
    const auto [it, fresh] = expected.try_emplace({key.a, key.b}, uint32_t(expected.size()));
    ASSERT_EQ(interner.Intern(key), it->second) << "draw " << i << (fresh ? " (new key)" : "");
    ASSERT_EQ(interner.size(), expected.size());
  }
}

TEST(FlatInternerTest, GivesDenseIdsInFirstSeenOrderAndTheSameIdAgain) {
  CheckAgainstMap<GoodHash>(5000, 60000);  // grows past 1024 slots several times
}

TEST(FlatInternerTest, KeysWithTheSameHashStayDistinct) {
  CheckAgainstMap<CollidingHash>(300, 6000);
}

TEST(FlatInternerTest, ClearStartsIdsAgain) {
  FlatInterner<Pair, GoodHash> interner;
  for (int i = 0; i < 3000; ++i) interner.Intern(Pair{i, 0});
  interner.clear();
  EXPECT_EQ(interner.size(), 0u);
  EXPECT_EQ(interner.Intern(Pair{2999, 0}), 0u);
  EXPECT_EQ(interner.Intern(Pair{5, 0}), 1u);
  EXPECT_EQ(interner.Intern(Pair{2999, 0}), 0u);
}

}  // namespace
}  // namespace gpufleet::sched

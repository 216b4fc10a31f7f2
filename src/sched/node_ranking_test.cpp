#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <type_traits>

#include "sched/node_rank_buckets.h"
#include "sched/node_rank_heap.h"

namespace gpufleet::sched {
namespace {

// The best of `held` by the heap's order: highest score, then smallest id.
std::optional<std::pair<uint32_t, double>> BestOf(const std::map<uint32_t, double>& held) {
  std::optional<std::pair<uint32_t, double>> best;
  for (const auto& [id, score] : held) {  // ascending ids: a strict > keeps the smallest on ties
    if (!best || score > best->second) best = std::pair{id, score};
  }
  return best;
}

// Both rankings keep one contract; the buckets take whole scores 0..levels-1.
template <typename Ranking>
Ranking Make(uint32_t ids) {
  if constexpr (std::is_same_v<Ranking, NodeRankBuckets>) {
    return NodeRankBuckets(ids, 21);
  } else {
    return NodeRankHeap(ids);
  }
}

template <typename Ranking>
class NodeRankingTest : public ::testing::Test {};
using Rankings = ::testing::Types<NodeRankHeap, NodeRankBuckets>;
TYPED_TEST_SUITE(NodeRankingTest, Rankings);

TYPED_TEST(NodeRankingTest, EqualScoresGoToTheSmallerId) {
  auto heap = Make<TypeParam>(200);
  heap.Set(5, 1.0);
  heap.Set(130, 1.0);
  heap.Set(7, 1.0);
  heap.Set(2, 1.0);
  EXPECT_EQ(heap.top().id, 2u);
  heap.Remove(2);
  EXPECT_EQ(heap.top().id, 5u);
  heap.Set(7, 2.0);
  EXPECT_EQ(heap.top().id, 7u);
  EXPECT_EQ(heap.top().score, 2.0);
  heap.Set(7, 0.0);  // lowered in place: 5 is best again, and 7 is held once
  EXPECT_EQ(heap.top().id, 5u);
  EXPECT_EQ(heap.size(), 3u);
  heap.Remove(3);  // not held: nothing happens
  EXPECT_EQ(heap.size(), 3u);
  heap.Remove(5);
  heap.Remove(7);
  EXPECT_EQ(heap.top().id, 130u);  // in the third word of the bit sets
  heap.Remove(130);
  EXPECT_TRUE(heap.empty());
}

// Past 4,096 ids the buckets' summary needs a second word: ids on both sides of that line and of
// a word's end, with the best moving between them.
TYPED_TEST(NodeRankingTest, IdsBeyondTheFirstSummaryWord) {
  auto heap = Make<TypeParam>(5000);
  heap.Set(4159, 3);
  heap.Set(4096, 3);
  heap.Set(4999, 3);
  EXPECT_EQ(heap.top().id, 4096u);
  heap.Set(4095, 3);
  EXPECT_EQ(heap.top().id, 4095u);
  heap.Remove(4095);
  heap.Remove(4096);
  EXPECT_EQ(heap.top().id, 4159u);
  heap.Set(4999, 4);
  EXPECT_EQ(heap.top().id, 4999u);
  heap.Remove(4999);
  heap.Set(64, 1);
  EXPECT_EQ(heap.top().id, 4159u);
  heap.Remove(4159);
  EXPECT_EQ(heap.top().id, 64u);
  EXPECT_EQ(heap.size(), 1u);
}

// Random sets, raises, lowers and removals (scores from a small range, so ties are common)
// against a plain map, with bulk fills mixed in.
TYPED_TEST(NodeRankingTest, MatchesAPlainScanThroughRandomUpdates) {
  constexpr uint32_t kIds = 300;
  std::mt19937 gen(7);
  std::uniform_int_distribution<uint32_t> any_id(0, kIds - 1);
  std::uniform_int_distribution<int> any_score(0, 20), any_op(0, 9);
  for (int round = 0; round < 20; ++round) {
    auto heap = Make<TypeParam>(kIds);
    std::map<uint32_t, double> held;
    for (uint32_t id = 0; id < kIds; ++id) {
      if (any_op(gen) < 5) {
        const double score = any_score(gen);
        heap.AppendUnordered(id, score);
        held[id] = score;
      }
    }
    heap.Heapify();
    for (int step = 0; step < 3000; ++step) {
      const uint32_t id = any_id(gen);
      if (any_op(gen) < 3) {
        heap.Remove(id);
        held.erase(id);
      } else {
        const double score = any_score(gen);
        heap.Set(id, score);
        held[id] = score;
      }
      ASSERT_EQ(heap.size(), held.size()) << "round " << round << " step " << step;
      ASSERT_EQ(heap.contains(id), held.count(id) == 1);
      const auto best = BestOf(held);
      ASSERT_EQ(heap.empty(), !best.has_value());
      if (best) {
        ASSERT_EQ(heap.top().id, best->first) << "round " << round << " step " << step;
        ASSERT_EQ(heap.top().score, best->second);
      }
    }
  }
}

using NodeRankBucketsDeathTest = ::testing::Test;
TEST_F(NodeRankBucketsDeathTest, ScoresMustBeWholeAndInRange) {
  NodeRankBuckets buckets(10, 5);
  EXPECT_DEATH(buckets.Set(1, 2.5), "invariant violated");
  EXPECT_DEATH(buckets.Set(1, 5), "invariant violated");
  EXPECT_DEATH(buckets.Set(1, -1), "invariant violated");
}

}  // namespace
}  // namespace gpufleet::sched

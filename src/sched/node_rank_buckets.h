#pragma once
// `NodeRankBuckets`: the same contract as `NodeRankHeap` (the nodes that fit one job shape, best
// first: the higher score, then the smaller id), for scores that are whole numbers from 0 to
// `levels - 1`, as FGD's are. Each level keeps a bit set of its ids, with a summary bit per word,
// so setting, moving or removing an id costs a few word writes and finding the best costs two
// word scans, whatever the node count: no log factor, and no walk through a heap that outgrows the
// caches. A level's bit set is allocated when an id first lands on it.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/check.h"

namespace gpufleet::sched {

class NodeRankBuckets {
 public:
  struct Entry {
    double score;
    uint32_t id;
  };

  // An empty set for ids 0..capacity-1 and scores 0..levels-1 (levels at most 65,534).
  NodeRankBuckets(uint32_t capacity, int levels)
      : capacity_(capacity),
        words_((capacity + 63) / 64),
        level_of_(capacity, kAbsent),
        levels_(static_cast<size_t>(levels)) {
    GPUFLEET_CHECK(levels > 0 && levels < kAbsent);
  }

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  bool contains(uint32_t id) const { return level_of_[id] != kAbsent; }
  // The best entry; the set must not be empty.
  Entry top() const {
    const Level& level = levels_[top_];
    size_t s = 0;
    while (level.summary[s] == 0) ++s;
    const size_t w = s * 64 + static_cast<size_t>(std::countr_zero(level.summary[s]));
    return Entry{
        static_cast<double>(top_),
        static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(level.bits[w])))};
  }

  // Whether `score` is a whole number in 0..levels-1, as Set requires.
  bool Accepts(double score) const {
    return score >= 0 && score < static_cast<double>(levels_.size()) &&
           static_cast<double>(static_cast<uint16_t>(score)) == score;
  }
  // Calls `f(id, score)` for every id held.
  template <typename F>
  void ForEach(F&& f) const {
    for (size_t level = 0; level < levels_.size(); ++level) {
      const Level& l = levels_[level];
      for (size_t w = 0; l.count > 0 && w < l.bits.size(); ++w) {
        for (uint64_t word = l.bits[w]; word != 0; word &= word - 1) {
          f(static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(word))),
            static_cast<double>(level));
        }
      }
    }
  }

  // Holds `id` with `score`, which must be a whole number in 0..levels-1 (`Accepts`).
  void Set(uint32_t id, double score) {
    GPUFLEET_CHECK(id < capacity_);
    GPUFLEET_CHECK(Accepts(score));
    const auto level = static_cast<uint16_t>(score);
    const uint16_t old = level_of_[id];
    if (old == level) return;
    if (old != kAbsent) Clear(old, id);
    Add(level, id);
  }

  // Drops `id`; nothing when it is not held.
  void Remove(uint32_t id) {
    GPUFLEET_CHECK(id < capacity_);
    if (level_of_[id] != kAbsent) Clear(level_of_[id], id);
  }

  // The heap's bulk fill, for the same callers: here each add is already in order.
  void AppendUnordered(uint32_t id, double score) {
    GPUFLEET_CHECK(id < capacity_ && level_of_[id] == kAbsent);
    Set(id, score);
  }
  void Heapify() {}

 private:
  static constexpr uint16_t kAbsent = 0xffff;
  struct Level {
    uint32_t count = 0;
    std::vector<uint64_t> bits;     // one bit per id
    std::vector<uint64_t> summary;  // one bit per word of `bits` that is not zero
  };

  void Add(uint16_t level, uint32_t id) {
    Level& l = levels_[level];
    if (l.bits.empty()) {
      l.bits.assign(words_, 0);
      l.summary.assign((words_ + 63) / 64, 0);
    }
    const size_t w = id / 64;
    l.bits[w] |= uint64_t{1} << (id % 64);
    l.summary[w / 64] |= uint64_t{1} << (w % 64);
    ++l.count;
    level_of_[id] = level;
    ++size_;
    if (size_ == 1 || level > top_) top_ = level;
  }
  void Clear(uint16_t level, uint32_t id) {
    Level& l = levels_[level];
    const size_t w = id / 64;
    l.bits[w] &= ~(uint64_t{1} << (id % 64));
    if (l.bits[w] == 0) l.summary[w / 64] &= ~(uint64_t{1} << (w % 64));
    --l.count;
    level_of_[id] = kAbsent;
    --size_;
    if (level == top_ && l.count == 0 && size_ > 0) {
      while (levels_[top_].count == 0) --top_;
    }
  }

  uint32_t capacity_;
  size_t words_;
  std::vector<uint16_t> level_of_;  // per id, its level (kAbsent: not held)
  std::vector<Level> levels_;
  size_t size_ = 0;
  uint16_t top_ = 0;  // the highest level holding an id, while any is held
};

}  // namespace gpufleet::sched

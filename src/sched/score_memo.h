#pragma once
// `ScoreMemo`: a score per 64-bit key, in one flat open-addressed table (linear probing, grows at
// half full). The placer looks a score up for every node that changed, for every job shape placed
// after it: std::unordered_map spent most of that time allocating one node per entry and chasing
// pointers. Written here rather than taken from a library because the need is this narrow
// (integer keys, no erase) and abseil's map would add another shared library to load at start.

#include <bit>
#include <cstdint>
#include <vector>

namespace gpufleet::sched {

class ScoreMemo {
 public:
  // The score stored for `key`, or null. `key` must not be kEmpty.
  const double* Find(uint64_t key) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = Home(key);; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.key == key) return &slot.score;
      if (slot.key == kEmpty) return nullptr;
    }
  }
  // Stores `score` for `key` (which must not be stored yet, nor be kEmpty).
  void Insert(uint64_t key, double score) {
    if (2 * (size_ + 1) > slots_.size()) Grow();
    size_t i = Home(key);
    while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
    slots_[i] = Slot{key, score};
    ++size_;
  }
  size_t size() const { return size_; }
  void Clear() {
    slots_.clear();
    size_ = 0;
    mask_ = 0;
  }

  static constexpr uint64_t kEmpty = ~uint64_t{0};

 private:
  struct Slot {
    uint64_t key = kEmpty;
    double score = 0;
  };
  size_t Home(uint64_t key) const {
    // Fibonacci hashing: the top bits of the product depend on every bit of the key.
    return static_cast<size_t>((key * 0x9e3779b97f4a7c15ULL) >> shift_);
  }
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    shift_ = 64 - std::countr_zero(slots_.size());
    size_ = 0;
    for (const Slot& slot : old) {
      if (slot.key != kEmpty) Insert(slot.key, slot.score);
    }
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 63;
  size_t size_ = 0;
};

}  // namespace gpufleet::sched

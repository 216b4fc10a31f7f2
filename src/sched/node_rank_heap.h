#pragma once
// `NodeRankHeap`: the nodes that fit one job shape, best first, each held once under its id (the
// node's tie-break rank). A node's score is changed, or the node removed, in place, through a
// position index: the heap never holds stale entries and never grows beyond the node count. Best
// means the higher score, and among equal scores the smaller id, a strict total order, so the top
// is the same node that a scan of every node would choose.
//
// Four children per entry rather than two: a sift touches half as many levels, and the four
// 16-byte children of an entry share one 64-byte cache line, which is what the placer's cost at
// 5,000 nodes and 150 shapes is made of (the heaps outgrow the caches). Written here because no
// Debian package offers an indexed d-ary heap with a caller-chosen tie-break.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/check.h"

namespace gpufleet::sched {

class NodeRankHeap {
 public:
  struct Entry {
    double score;
    uint32_t id;
  };

  // An empty heap for ids 0..capacity-1.
  explicit NodeRankHeap(uint32_t capacity) : pos_(capacity, kAbsent) {}

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  bool contains(uint32_t id) const { return pos_[id] != kAbsent; }
  // The best entry; the heap must not be empty.
  const Entry& top() const { return heap_.front(); }

  // Holds `id` with `score`: adds it, or moves it to where its new score belongs.
  void Set(uint32_t id, double score) {
    GPUFLEET_CHECK(id < pos_.size());
    const uint32_t at = pos_[id];
    if (at == kAbsent) {
      heap_.push_back(Entry{score, id});
      pos_[id] = static_cast<uint32_t>(heap_.size() - 1);
      SiftUp(heap_.size() - 1);
      return;
    }
    const double old = heap_[at].score;
    heap_[at].score = score;
    if (score > old) {
      SiftUp(at);
    } else if (score < old) {
      SiftDown(at);
    }
  }

  // Drops `id`; nothing when it is not held.
  void Remove(uint32_t id) {
    GPUFLEET_CHECK(id < pos_.size());
    const uint32_t at = pos_[id];
    if (at == kAbsent) return;
    pos_[id] = kAbsent;
    const Entry last = heap_.back();
    heap_.pop_back();
    if (at == heap_.size()) return;  // it was the last entry
    heap_[at] = last;
    pos_[last.id] = at;
    if (at > 0 && Below(heap_[Parent(at)], last)) {
      SiftUp(at);
    } else {
      SiftDown(at);
    }
  }

  // Adds `id` without restoring the heap order; call Heapify after a run of these. For filling
  // a new heap in one linear pass. `id` must not be held.
  void AppendUnordered(uint32_t id, double score) {
    GPUFLEET_CHECK(id < pos_.size() && pos_[id] == kAbsent);
    heap_.push_back(Entry{score, id});
    pos_[id] = static_cast<uint32_t>(heap_.size() - 1);
  }
  void Heapify() {
    if (heap_.size() < 2) return;
    for (size_t i = Parent(heap_.size() - 1) + 1; i-- > 0;) SiftDown(i);
  }

 private:
  static constexpr uint32_t kAbsent = std::numeric_limits<uint32_t>::max();
  static constexpr size_t kArity = 4;

  // `a` ranks below `b`: `b` has the higher score, or the same score and the smaller id.
  static bool Below(const Entry& a, const Entry& b) {
    return a.score < b.score || (a.score == b.score && a.id > b.id);
  }
  static size_t Parent(size_t i) { return (i - 1) / kArity; }

  void Place(size_t i, const Entry& e) {
    heap_[i] = e;
    pos_[e.id] = static_cast<uint32_t>(i);
  }
  void SiftUp(size_t i) {
    const Entry moving = heap_[i];
    while (i > 0) {
      const size_t parent = Parent(i);
      if (!Below(heap_[parent], moving)) break;
      Place(i, heap_[parent]);
      i = parent;
    }
    Place(i, moving);
  }
  void SiftDown(size_t i) {
    const size_t n = heap_.size();
    const Entry moving = heap_[i];
    while (true) {
      const size_t first = kArity * i + 1;
      if (first >= n) break;
      const size_t end = first + kArity < n ? first + kArity : n;
      size_t best = first;
      for (size_t c = first + 1; c < end; ++c) {
        if (Below(heap_[best], heap_[c])) best = c;
      }
      if (!Below(moving, heap_[best])) break;
      Place(i, heap_[best]);
      i = best;
    }
    Place(i, moving);
  }

  std::vector<Entry> heap_;
  std::vector<uint32_t> pos_;  // per id, its index in heap_ (kAbsent: not held)
};

}  // namespace gpufleet::sched

#include "testing/gpuallocator_besteffort.h"

#include <bit>
#include <vector>

namespace gpufleet::test {
namespace {

constexpr int kEmpty = -1;  // a padding slot

struct Search {
  const GpuAllocatorView& view;
  int size;
  int padding;
  std::vector<std::vector<int>> accum;
  std::vector<std::vector<int>> best;
  int best_score = 0;
  bool found = false;

  int SetScore(const std::vector<int>& set) const {
    int score = 0;
    for (size_t i = 0; i < set.size(); ++i) {
      for (size_t j = i + 1; j < set.size(); ++j) {
        if (set[i] != kEmpty && set[j] != kEmpty) {
          score += GpuAllocatorPairScore(view, set[i], set[j]);
        }
      }
    }
    return score;
  }

  void Visit() {
    int score = 0;
    for (const auto& set : accum) score += SetScore(set);
    if (!found || score > best_score) {
      best = accum;
      best_score = score;
      found = true;
    }
  }

  static int CountEmpty(const std::vector<int>& set) {
    int n = 0;
    for (int g : set) n += g == kEmpty;
    return n;
  }

  // Every partition of `items` into sets of `size`, in the order described in the header.
  void Partition(const std::vector<int>& items) {
    if (static_cast<int>(items.size()) == size) {
      accum.push_back(items);
      Visit();
      accum.pop_back();
      return;
    }
    // Sets holding items[0] and size-1 of the rest, the rest chosen in lexicographic order.
    const int n = static_cast<int>(items.size()) - 1;
    const int k = size - 1;
    std::vector<int> pos(k);
    for (int i = 0; i < k; ++i) pos[i] = i;
    while (true) {
      std::vector<int> set = {items[0]};
      std::vector<char> taken(items.size(), 0);
      taken[0] = 1;
      for (int i = 0; i < k; ++i) {
        set.push_back(items[1 + pos[i]]);
        taken[1 + pos[i]] = 1;
      }
      const int empty = CountEmpty(set);
      if (empty == 0 || empty == padding) {
        std::vector<int> rest;
        for (size_t i = 0; i < items.size(); ++i) {
          if (!taken[i]) rest.push_back(items[i]);
        }
        accum.push_back(set);
        Partition(rest);
        accum.pop_back();
      }
      int i = k - 1;
      while (i >= 0 && pos[i] == n - k + i) --i;
      if (i < 0) break;
      ++pos[i];
      for (int j = i + 1; j < k; ++j) pos[j] = pos[j - 1] + 1;
    }
  }
};

}  // namespace

int GpuAllocatorPairScore(const GpuAllocatorView& view, int a, int b) {
  if (a == b) return 0;
  const core::GpuLinks& l = *view.links;
  int score = (l.Pcie(a, b) + 1) * 10;
  const int nvlinks = view.sees_nvswitch_links ? l.NvLinks(a, b) : 0;
  if (nvlinks >= 1 && nvlinks <= 12) score += 100 * nvlinks;
  return score;
}

int GpuAllocatorSetScore(const GpuAllocatorView& view, core::GpuMask set) {
  int score = 0;
  for (int a = 0; a < 32; ++a) {
    if (!((set >> a) & 1u)) continue;
    for (int b = a + 1; b < 32; ++b) {
      if ((set >> b) & 1u) score += GpuAllocatorPairScore(view, a, b);
    }
  }
  return score;
}

core::GpuMask GpuAllocatorBestEffort(const GpuAllocatorView& view, core::GpuMask free, int count) {
  if (count <= 0 || std::popcount(free) < count) return 0;
  std::vector<int> items;
  for (int g = 0; g < 32; ++g) {
    if ((free >> g) & 1u) items.push_back(g);
  }
  if (count == 1) return 1u << items[0];
  Search search{view, count, 0, {}, {}, 0, false};
  while (items.size() % count != 0) {
    items.push_back(kEmpty);
    ++search.padding;
  }
  search.Partition(items);
  // The partition's first highest-scoring set.
  const std::vector<int>* best = nullptr;
  int best_score = 0;
  for (const auto& set : search.best) {
    const int score = search.SetScore(set);
    if (best == nullptr || score > best_score) {
      best = &set;
      best_score = score;
    }
  }
  core::GpuMask mask = 0;
  for (int g : *best) {
    if (g != kEmpty) mask |= 1u << g;
  }
  return mask;
}

}  // namespace gpufleet::test

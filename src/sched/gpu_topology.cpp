#include "sched/gpu_topology.h"

#include <algorithm>
#include <array>
#include <bit>
#include <tuple>
#include <vector>

#include "core/check.h"

namespace gpufleet::sched {
namespace {

constexpr int kNvLinkClass = core::kMaxPcieClass + 1;

// Pair tables for fast set scoring, indexed by GPU.
struct PairTable {
  int n = 0;
  std::array<std::array<uint8_t, core::kMaxGpusPerNode>, core::kMaxGpusPerNode> cls{};
  std::array<std::array<uint8_t, core::kMaxGpusPerNode>, core::kMaxGpusPerNode> nv{};
  std::array<std::array<uint8_t, core::kMaxGpusPerNode>, core::kMaxGpusPerNode> pcie{};

  explicit PairTable(const core::GpuLinks& links) : n(links.num_gpus) {
    for (int a = 0; a < n; ++a) {
      for (int b = 0; b < n; ++b) {
        nv[a][b] = static_cast<uint8_t>(links.NvLinks(a, b));
        pcie[a][b] = static_cast<uint8_t>(links.Pcie(a, b));
        cls[a][b] = static_cast<uint8_t>(nv[a][b] > 0 ? kNvLinkClass : pcie[a][b]);
      }
    }
  }

  SetConnection Of(const int* gpus, int k) const {
    SetConnection c;
    c.min_class = kNvLinkClass;
    c.min_pcie = core::kMaxPcieClass;
    for (int i = 0; i < k; ++i) {
      for (int j = i + 1; j < k; ++j) {
        const int a = gpus[i], b = gpus[j];
        c.min_class = std::min<int>(c.min_class, cls[a][b]);
        c.nvlinks += nv[a][b];
        c.class_sum += cls[a][b];
        c.min_pcie = std::min<int>(c.min_pcie, pcie[a][b]);
        c.pcie_sum += pcie[a][b];
      }
    }
    return c;
  }
};

// Keys 1 to 3 of the contract.
using ConnectionKey = std::tuple<int, int, int>;
ConnectionKey KeyOf(const SetConnection& c) { return {c.min_class, c.nvlinks, c.class_sum}; }
constexpr ConnectionKey kNoSet{-1, -1, -1};

// Calls f(indices) for every k-subset of items[0..n), in lexicographic order.
template <typename F>
void ForEachSubset(const int* items, int n, int k, F&& f) {
  if (k > n || k <= 0) return;
  std::array<int, kMaxTopologyGpus> pos{};
  std::array<int, kMaxTopologyGpus> set{};
  for (int i = 0; i < k; ++i) pos[i] = i;
  while (true) {
    for (int i = 0; i < k; ++i) set[i] = items[pos[i]];
    f(set.data());
    int i = k - 1;
    while (i >= 0 && pos[i] == n - k + i) --i;
    if (i < 0) return;
    ++pos[i];
    for (int j = i + 1; j < k; ++j) pos[j] = pos[j - 1] + 1;
  }
}

int64_t Choose(int n, int k) {
  if (k < 0 || k > n) return 0;
  int64_t r = 1;
  for (int i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}

int ToList(core::GpuMask mask, int* out) {
  int n = 0;
  while (mask != 0) {
    out[n++] = std::countr_zero(mask);
    mask &= mask - 1;
  }
  return n;
}

// Key 4: the best set a later job of 4, 3 and 2 GPUs would find among `rest`.
std::array<ConnectionKey, 3> Lookahead(const PairTable& t, core::GpuMask rest) {
  std::array<int, core::kMaxGpusPerNode> items{};
  const int n = ToList(rest, items.data());
  std::array<ConnectionKey, 3> out{kNoSet, kNoSet, kNoSet};
  for (int k = kMaxTopologyGpus; k >= kMinTopologyGpus; --k) {
    ConnectionKey& best = out[kMaxTopologyGpus - k];
    ForEachSubset(items.data(), n, k,
                  [&](const int* set) { best = std::max(best, KeyOf(t.Of(set, k))); });
  }
  return out;
}

core::GpuMask MaskOf(const int* set, int k) {
  core::GpuMask m = 0;
  for (int i = 0; i < k; ++i) m |= 1u << set[i];
  return m;
}

}  // namespace

SetConnection ConnectionOf(const core::GpuLinks& links, core::GpuMask set) {
  const PairTable t(links);
  std::array<int, core::kMaxGpusPerNode> items{};
  const int k = ToList(set, items.data());
  return t.Of(items.data(), k);
}

core::GpuMask WholeFreeGpus(const core::NodeState& node) {
  core::GpuMask mask = 0;
  for (int g = 0; g < node.num_gpus; ++g) {
    if (node.gpu_free[g] == core::kGpuMilli) mask |= 1u << g;
  }
  return mask;
}

core::GpuMask PickConnectedGpus(const core::GpuLinks& links, core::GpuMask free, int count) {
  GPUFLEET_CHECK(count >= kMinTopologyGpus && count <= kMaxTopologyGpus);
  GPUFLEET_CHECK(!links.empty());
  GPUFLEET_CHECK(links.num_gpus >= 32 || (free >> links.num_gpus) == 0);
  GPUFLEET_CHECK(std::popcount(free) >= count);
  const PairTable t(links);
  std::array<int, core::kMaxGpusPerNode> items{};
  const int n = ToList(free, items.data());

  // Keys 1-3 over every candidate; keep those tied for the best, in enumeration order.
  ConnectionKey best = kNoSet;
  std::vector<core::GpuMask> tied;
  std::vector<SetConnection> tied_conn;
  ForEachSubset(items.data(), n, count, [&](const int* set) {
    const SetConnection c = t.Of(set, count);
    const ConnectionKey key = KeyOf(c);
    if (key < best) return;
    if (key > best) {
      best = key;
      tied.clear();
      tied_conn.clear();
    }
    tied.push_back(MaskOf(set, count));
    tied_conn.push_back(c);
  });
  if (tied.size() == 1) return tied[0];

  // Keys 4-6 among the tied candidates; the first of equals wins (key 6).
  const int rest = n - count;
  const int64_t per_candidate = Choose(rest, 4) + Choose(rest, 3) + Choose(rest, 2);
  const bool lookahead = static_cast<int64_t>(tied.size()) * per_candidate <= kMaxLookaheadSets;
  size_t winner = 0;
  std::array<ConnectionKey, 3> winner_left{};
  if (lookahead) winner_left = Lookahead(t, free & ~tied[0]);
  for (size_t i = 1; i < tied.size(); ++i) {
    if (lookahead) {
      const std::array<ConnectionKey, 3> left = Lookahead(t, free & ~tied[i]);
      if (left < winner_left) continue;
      if (left > winner_left) {
        winner = i;
        winner_left = left;
        continue;
      }
    }
    const SetConnection& a = tied_conn[i];
    const SetConnection& w = tied_conn[winner];
    if (std::tie(a.min_pcie, a.pcie_sum) > std::tie(w.min_pcie, w.pcie_sum)) winner = i;
  }
  return tied[winner];
}

}  // namespace gpufleet::sched

#pragma once
// `FlatInterner<Key, Hash>`: gives each distinct key a dense id (0, 1, 2, ... in the order keys
// are first seen), in one flat open-addressed table of ids (linear probing, grows at half full)
// beside a vector of the keys. The placer interns a node state after every change it sees;
// std::unordered_map spent that time allocating one node per state and rehashing as they came.
// Written here for the same reason as `ScoreMemo`: the need is narrow (no erase, dense ids) and a
// map library would add a shared library to every start.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpufleet::sched {

template <typename Key, typename Hash>
class FlatInterner {
 public:
  // The id of `key`: the one it was given before, else the next unused one (`size()` before).
  uint32_t Intern(const Key& key) {
    if (2 * (keys_.size() + 1) > slots_.size()) Grow();
    const uint64_t hash = Hash{}(key);
    const uint32_t tag = Tag(hash);
    for (size_t i = Home(hash);; i = (i + 1) & mask_) {
      const uint64_t slot = slots_[i];
      if (slot == 0) {
        const auto id = static_cast<uint32_t>(keys_.size());
        keys_.push_back(key);
        slots_[i] = uint64_t{tag} << 32 | (id + 1);
        return id;
      }
      if (static_cast<uint32_t>(slot >> 32) == tag) {
        const auto id = static_cast<uint32_t>(slot) - 1;
        if (keys_[id] == key) return id;
      }
    }
  }
  size_t size() const { return keys_.size(); }
  // Forgets every key; ids start again from 0.
  void clear() {
    keys_.clear();
    slots_.clear();
    mask_ = 0;
  }

 private:
  // A slot is 0 when empty, else the key's hash tag (high 32 bits) and its id + 1 (low 32 bits):
  // most probes that miss are told apart by the tag, without reading the key.
  static uint32_t Tag(uint64_t hash) { return static_cast<uint32_t>(hash >> 32) | 1u; }
  size_t Home(uint64_t hash) const {
    return static_cast<size_t>((hash * 0x9e3779b97f4a7c15ULL) >> shift_);
  }
  void Grow() {
    slots_.assign(slots_.empty() ? 1024 : slots_.size() * 2, 0);
    mask_ = slots_.size() - 1;
    shift_ = 64 - std::countr_zero(slots_.size());
    for (size_t id = 0; id < keys_.size(); ++id) {
      const uint64_t hash = Hash{}(keys_[id]);
      size_t i = Home(hash);
      while (slots_[i] != 0) i = (i + 1) & mask_;
      slots_[i] = uint64_t{Tag(hash)} << 32 | (id + 1);
    }
  }

  std::vector<Key> keys_;        // by id
  std::vector<uint64_t> slots_;  // 0 or tag << 32 | (id + 1)
  size_t mask_ = 0;
  int shift_ = 63;
};

}  // namespace gpufleet::sched

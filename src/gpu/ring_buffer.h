#pragma once
// `RingBuffer<T>`: the last `capacity` values pushed, oldest first; fixed memory after the first
// `capacity` pushes.
#include <cstddef>
#include <vector>

#include "core/check.h"

namespace gpufleet::gpu {

template <typename T>
class RingBuffer {
 public:
  explicit RingBuffer(std::size_t capacity) : capacity_(capacity) { GPUFLEET_CHECK(capacity > 0); }

  void Push(T value) {
    if (items_.size() < capacity_) {
      items_.push_back(std::move(value));
    } else {
      items_[next_] = std::move(value);
    }
    next_ = (next_ + 1) % capacity_;
  }
  std::size_t size() const { return items_.size(); }
  std::size_t capacity() const { return capacity_; }
  bool empty() const { return items_.empty(); }
  // The i-th oldest value still held (0 <= i < size()).
  const T& operator[](std::size_t i) const {
    GPUFLEET_CHECK(i < items_.size());
    const std::size_t start = items_.size() < capacity_ ? 0 : next_;
    return items_[(start + i) % capacity_];
  }
  const T& back() const { return (*this)[items_.size() - 1]; }

 private:
  std::size_t capacity_;
  std::size_t next_ = 0;
  std::vector<T> items_;
};

}  // namespace gpufleet::gpu

#pragma once
// `WriteRateLimiter`: how many writing API requests (submits, cancels, any POST, PUT or DELETE
// under /v1 but the agents') each user may make: a token bucket per user, `burst` deep, refilled
// at `per_s` a second. One user's loop of submits and cancels, each a synced store write and an
// event, would otherwise take the store's whole write rate from every other user. Pure: the
// caller passes the clock. Thread-safe. Memory: one bucket per user who wrote recently; a bucket
// refilled to the brim says nothing and is dropped.
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace gpufleet::controller {

class WriteRateLimiter {
 public:
  // `per_s` <= 0 (or not a number) admits everything; a positive one is at least kMinPerS.
  WriteRateLimiter(double per_s, int64_t burst);
  static constexpr double kMinPerS = 0.001;
  static constexpr int64_t kMaxWaitMs = 86'400'000;  // what Take says at most

  // Takes one request of `user` at `now_ms`: 0 when admitted, else how many milliseconds until
  // one would be (at least 1); a refused request takes nothing.
  int64_t Take(const std::string& user, int64_t now_ms);
  bool enabled() const { return per_s_ > 0; }
  double per_s() const { return per_s_; }
  int64_t burst() const { return static_cast<int64_t>(burst_); }
  // Buckets held now (tests).
  std::size_t buckets() const;

 private:
  struct Bucket {
    double tokens = 0;
    int64_t at_ms = 0;
  };
  void PruneLocked(int64_t now_ms);

  double per_s_;
  double burst_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Bucket> buckets_;
  int64_t pruned_ms_ = 0;
};

}  // namespace gpufleet::controller

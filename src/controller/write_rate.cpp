#include "controller/write_rate.h"

#include <algorithm>
#include <cmath>

namespace gpufleet::controller {

WriteRateLimiter::WriteRateLimiter(double per_s, int64_t burst)
    : per_s_(std::isfinite(per_s) && per_s > 0 ? std::max(per_s, kMinPerS) : 0),
      burst_(static_cast<double>(std::max<int64_t>(1, burst))) {}

int64_t WriteRateLimiter::Take(const std::string& user, int64_t now_ms) {
  if (per_s_ <= 0) return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  PruneLocked(now_ms);
  auto [it, added] = buckets_.try_emplace(user, Bucket{burst_, now_ms});
  Bucket& b = it->second;
  if (!added && now_ms > b.at_ms) {  // a clock that steps back refills nothing
    b.tokens = std::min(burst_, b.tokens + static_cast<double>(now_ms - b.at_ms) * per_s_ / 1000);
    b.at_ms = now_ms;
  }
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return 0;
  }
  const double wait_ms = std::ceil((1 - b.tokens) * 1000 / per_s_);
  return std::clamp<int64_t>(static_cast<int64_t>(std::min(wait_ms, 1e12)), 1, kMaxWaitMs);
}

std::size_t WriteRateLimiter::buckets() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return buckets_.size();
}

void WriteRateLimiter::PruneLocked(int64_t now_ms) {
  // At most once a minute: a bucket that has had time to refill is as good as none.
  if (now_ms - pruned_ms_ < 60000 && now_ms >= pruned_ms_) return;
  pruned_ms_ = now_ms;
  const double full_after_ms = burst_ * 1000 / per_s_;
  std::erase_if(buckets_, [&](const auto& entry) {
    return static_cast<double>(now_ms - entry.second.at_ms) >= full_after_ms;
  });
}

}  // namespace gpufleet::controller

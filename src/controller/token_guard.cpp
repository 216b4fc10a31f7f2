#include "controller/token_guard.h"

#include <algorithm>
#include <cmath>

namespace gpufleet::controller {

void UnknownTokenGuard::RefillLocked(Bucket& bucket, int64_t now_ms) {
  if (now_ms > bucket.at_ms) {
    bucket.tokens = std::min<double>(
        kBurst, bucket.tokens + static_cast<double>(now_ms - bucket.at_ms) / kRefillMs);
  }
  bucket.at_ms = std::max(bucket.at_ms, now_ms);
}

UnknownTokenGuard::Bucket& UnknownTokenGuard::BucketOfLocked(const std::string& address,
                                                             int64_t now_ms) {
  auto found = buckets_.find(address);
  if (found != buckets_.end()) return found->second;
  if (buckets_.size() >= kMaxAddresses) {
    // A full bucket is as good as none: forget those before giving up on a bucket of its own.
    for (auto it = buckets_.begin(); it != buckets_.end();) {
      RefillLocked(it->second, now_ms);
      it = it->second.tokens >= kBurst ? buckets_.erase(it) : std::next(it);
    }
    if (buckets_.size() >= kMaxAddresses) return shared_;
  }
  Bucket& bucket = buckets_[address];
  bucket.at_ms = now_ms;
  return bucket;
}

bool UnknownTokenGuard::MayLookUp(const std::string& address, const std::string& sha256,
                                  int64_t now_ms, int* retry_after_s) {
  std::lock_guard lock(mutex_);
  Bucket& bucket = BucketOfLocked(address, now_ms);
  RefillLocked(bucket, now_ms);
  if (bucket.tokens >= 1) return true;
  auto accepted = accepted_.find(sha256);
  if (accepted != accepted_.end() && now_ms - accepted->second < kAcceptedMemoryMs) return true;
  ++refused_;
  if (retry_after_s) {
    const double wait_ms = (1 - bucket.tokens) * kRefillMs;
    *retry_after_s = std::max(1, static_cast<int>(std::ceil(wait_ms / 1000)));
  }
  return false;
}

void UnknownTokenGuard::Accepted(const std::string& sha256, int64_t now_ms) {
  std::lock_guard lock(mutex_);
  auto found = accepted_.find(sha256);
  if (found != accepted_.end()) {
    found->second = now_ms;
    return;
  }
  if (accepted_.size() >= kMaxAccepted) {
    std::erase_if(accepted_, [now_ms](const auto& entry) {
      return now_ms - entry.second >= kAcceptedMemoryMs;
    });
    // Still full of live tokens: start over rather than grow (each is remembered again at its
    // next request, one store read later).
    if (accepted_.size() >= kMaxAccepted) accepted_.clear();
  }
  accepted_.emplace(sha256, now_ms);
}

void UnknownTokenGuard::Unknown(const std::string& address, const std::string& sha256,
                                int64_t now_ms) {
  std::lock_guard lock(mutex_);
  accepted_.erase(sha256);
  Bucket& bucket = BucketOfLocked(address, now_ms);
  RefillLocked(bucket, now_ms);
  bucket.tokens = std::max(0.0, bucket.tokens - 1);
}

int64_t UnknownTokenGuard::refused() const {
  std::lock_guard lock(mutex_);
  return refused_;
}

}  // namespace gpufleet::controller

#pragma once
// `UnknownTokenGuard`: bounds how many unknown bearer tokens one client address may have looked
// up. Every request with a token the controller does not remember costs a store read (a query on
// PostgreSQL); without a bound, a client sending a stream of made-up tokens makes the store work
// for each one, and on PostgreSQL that contends with the scheduler's own reads and writes.
//
// Each client address (an IPv4 address or an IPv6 /64, as the HTTP server's connection cap counts
// them) has a bucket of `kBurst` lookups that come to nothing, refilled at one per `kRefillMs`.
// Once it is empty, a token from that address is looked up only if it was accepted recently
// (from any address, within `kAcceptedMemoryMs`): a legitimate user behind the same address as a
// flooder keeps working, and a token revoked since is still looked up and refused. Everything
// else is answered 429 without a store read until the bucket refills. A pure core: the caller
// passes the time (a steady clock's milliseconds); thread-safe.
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace gpufleet::controller {

class UnknownTokenGuard {
 public:
  static constexpr int kBurst = 30;
  static constexpr int64_t kRefillMs = 1000;
  static constexpr int64_t kAcceptedMemoryMs = 3600LL * 1000;
  // Addresses and accepted tokens tracked at most. Past `kMaxAddresses`, addresses not tracked
  // share one bucket, so many addresses together cannot make the table grow or escape the bound.
  static constexpr std::size_t kMaxAddresses = 8192;
  static constexpr std::size_t kMaxAccepted = 8192;

  // Whether the token `sha256` from `address` may be looked up in the store now. When not,
  // `retry_after_s` (if given) says in how many seconds the address may try an unknown one again.
  bool MayLookUp(const std::string& address, const std::string& sha256, int64_t now_ms,
                 int* retry_after_s = nullptr);
  // The store knew `sha256` (a live token of any kind).
  void Accepted(const std::string& sha256, int64_t now_ms);
  // The store did not know `sha256` (unknown, revoked or expired): it takes one from the
  // address's bucket and is no longer counted as accepted.
  void Unknown(const std::string& address, const std::string& sha256, int64_t now_ms);
  // Lookups refused so far (for the controller's metrics).
  int64_t refused() const;

 private:
  struct Bucket {
    double tokens = kBurst;
    int64_t at_ms = 0;
  };
  Bucket& BucketOfLocked(const std::string& address, int64_t now_ms);
  static void RefillLocked(Bucket& bucket, int64_t now_ms);

  mutable std::mutex mutex_;
  std::unordered_map<std::string, Bucket> buckets_;
  Bucket shared_;                                      // for addresses past kMaxAddresses
  std::unordered_map<std::string, int64_t> accepted_;  // sha256 -> when last accepted
  int64_t refused_ = 0;
};

}  // namespace gpufleet::controller

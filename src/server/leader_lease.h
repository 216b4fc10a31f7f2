#pragma once
// `LeaderLease`: this controller's claim to lead the controllers that share its store
// (store::Store::TryLead). A standby tries every `retry_ms`; the leader renews every quarter of
// the lease. It leads while the store confirms its epoch and its own deadline (the start of its
// last successful renewal plus the lease, less a safety margin, on the monotonic clock) has not
// passed: the store's lease, timed by the store's clock from a later instant, always ends after
// that, so two controllers never both believe they lead. Writes are fenced by the store anyway.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "store/store.h"

namespace gpufleet::server {

struct LeaderLeaseOptions {
  std::string holder;      // this controller's id (host, pid and a random part)
  std::string url;         // where it serves its API, shown to standbys' clients
  int64_t lease_ms = 3000;
  int64_t retry_ms = 250;  // a standby's tries
};

class LeaderLease {
 public:
  using Say = std::function<void(const std::string&)>;
  LeaderLease(store::Store& store, LeaderLeaseOptions options);
  ~LeaderLease();
  LeaderLease(const LeaderLease&) = delete;
  LeaderLease& operator=(const LeaderLease&) = delete;

  // Tries to lead until it does (true) or Cancel() (false). What it learns (who leads, store
  // errors, retried with backoff up to 5 s) goes to `say`, once per change.
  bool WaitToLead(const Say& say);
  void Cancel();
  // Renews on its own thread; `on_lost` runs once, on that thread, when the lease is lost.
  void StartRenewing(std::function<void(const std::string& why)> on_lost);
  // Whether this controller may act as the leader now.
  bool Leading() const;
  // Stops renewing, and resigns when it still leads, so that a standby takes over at once.
  void StopAndResign();
  // The leader as last seen (this controller's own lease once it leads).
  store::LeaderInfo Known() const;
  int64_t epoch() const { return epoch_.load(); }

 private:
  void RenewLoop(std::function<void(const std::string&)> on_lost);

  store::Store& store_;
  LeaderLeaseOptions options_;
  std::atomic<int64_t> epoch_{0};
  std::atomic<int64_t> deadline_ns_{0};  // steady clock; 0: not leading
  std::atomic<bool> lost_{false};
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  store::LeaderInfo known_;
  std::thread renewer_;
};

}  // namespace gpufleet::server

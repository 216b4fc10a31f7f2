#include "server/leader_lease.h"

#include <algorithm>
#include <chrono>

namespace gpufleet::server {
namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

LeaderLease::LeaderLease(store::Store& store, LeaderLeaseOptions options)
    : store_(store), options_(std::move(options)) {}

LeaderLease::~LeaderLease() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (renewer_.joinable()) renewer_.join();
}

// The margin kept between this controller's deadline and the store's: a fifth of the lease.
static int64_t MarginMs(int64_t lease_ms) { return std::max<int64_t>(lease_ms / 5, 50); }

bool LeaderLease::WaitToLead(const Say& say) {
  std::string last_said;
  int64_t backoff_ms = options_.retry_ms;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stop_) return false;
    }
    const int64_t started = SteadyNs();
    auto led = store_.TryLead(options_.holder, options_.url, options_.lease_ms);
    std::string news;
    if (led.ok() && led.value()) {
      epoch_ = *led.value();
      deadline_ns_ = started + (options_.lease_ms - MarginMs(options_.lease_ms)) * 1000000;
      lost_ = false;
      std::lock_guard<std::mutex> lock(mutex_);
      known_ = store::LeaderInfo{options_.holder, options_.url, epoch_.load(), options_.lease_ms};
      return true;
    }
    if (led.ok()) {
      backoff_ms = options_.retry_ms;
      auto leader = store_.Leader();
      if (leader.ok()) {
        std::lock_guard<std::mutex> lock(mutex_);
        known_ = leader.value();
        news = "standing by: " + (known_.url.empty() ? known_.holder : known_.url) +
               " leads (epoch " + std::to_string(known_.epoch) + ")";
      }
    } else {
      news = "cannot reach the store to take the lead: " + led.error() + " (retrying)";
      backoff_ms = std::min<int64_t>(backoff_ms * 2, 5000);
    }
    if (!news.empty() && news != last_said) {
      say(news);
      last_said = news;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait_for(lock, std::chrono::milliseconds(led.ok() ? options_.retry_ms : backoff_ms),
                   [this] { return stop_; });
  }
}

void LeaderLease::Cancel() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
}

void LeaderLease::StartRenewing(std::function<void(const std::string& why)> on_lost) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = false;  // a Cancel() that came after WaitToLead won stops waiting, not renewing
  }
  renewer_ = std::thread([this, on_lost = std::move(on_lost)] { RenewLoop(on_lost); });
}

void LeaderLease::RenewLoop(std::function<void(const std::string&)> on_lost) {
  const int64_t every_ms = std::max<int64_t>(options_.lease_ms / 4, 20);
  std::string last_error;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (wake_.wait_for(lock, std::chrono::milliseconds(every_ms), [this] { return stop_; })) {
        return;
      }
    }
    const int64_t started = SteadyNs();
    if (started >= deadline_ns_.load()) {
      // Paused (SIGSTOP, a long stall) or the store unreachable for too long: the lease may
      // have passed on, and this controller must not act on it.
      lost_ = true;
      deadline_ns_ = 0;
      on_lost("the lease of epoch " + std::to_string(epoch_.load()) +
              " ran out before it could be renewed" +
              (last_error.empty() ? std::string() : " (" + last_error + ")"));
      return;
    }
    auto renewed = store_.RenewLead(epoch_.load(), options_.lease_ms);
    if (!renewed.ok()) {
      last_error = renewed.error();
      continue;  // tried again until the deadline
    }
    last_error.clear();
    if (!renewed.value()) {
      lost_ = true;
      deadline_ns_ = 0;
      on_lost("another controller took the lease (this one held epoch " +
              std::to_string(epoch_.load()) + ")");
      return;
    }
    deadline_ns_ = started + (options_.lease_ms - MarginMs(options_.lease_ms)) * 1000000;
  }
}

bool LeaderLease::Leading() const {
  return !lost_.load() && epoch_.load() > 0 && SteadyNs() < deadline_ns_.load();
}

void LeaderLease::StopAndResign() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (renewer_.joinable()) renewer_.join();
  if (!lost_.load() && epoch_.load() > 0) (void)store_.ResignLead(epoch_.load());
  deadline_ns_ = 0;
}

store::LeaderInfo LeaderLease::Known() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return known_;
}

}  // namespace gpufleet::server

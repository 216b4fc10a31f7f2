#include "store/submit_group.h"

#include <algorithm>
#include <exception>
#include <string>

namespace gpufleet::store {

core::Result<AddedJob> SubmitGroup::Add(const JobRecord& job) {
  Pending me{&job, std::nullopt};
  std::unique_lock<std::mutex> lock(mutex_);
  queue_.push_back(&me);
  while (!me.result) {
    if (leader_active_) {
      cv_.wait(lock);
      continue;
    }
    leader_active_ = true;
    const std::size_t take = std::min(queue_.size(), max_batch_);
    std::vector<Pending*> batch(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(take));
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(take));
    std::vector<const JobRecord*> jobs;
    jobs.reserve(batch.size());
    for (const Pending* p : batch) jobs.push_back(p->job);
    lock.unlock();
    std::vector<core::Result<AddedJob>> results;
    try {
      results = commit_(jobs);
    } catch (const std::exception& e) {
      // The group must not stay led by nobody: every job of the batch fails, and the next waiter
      // leads the next batch.
      results.assign(batch.size(), core::Result<AddedJob>(
                                       core::Error{std::string("store: submit failed: ") + e.what(),
                                                   core::ErrorCode::kUnavailable}));
    }
    lock.lock();
    for (std::size_t k = 0; k < batch.size(); ++k) {
      batch[k]->result =
          k < results.size()
              ? std::move(results[k])
              : core::Result<AddedJob>(core::Error{
                    "store: the batch commit returned " + std::to_string(results.size()) +
                        " results for " + std::to_string(batch.size()) + " jobs",
                    core::ErrorCode::kUnavailable});
    }
    leader_active_ = false;
    cv_.notify_all();
  }
  return std::move(*me.result);
}

}  // namespace gpufleet::store

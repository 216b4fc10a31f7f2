#pragma once
// Group commit of job submissions, shared by the SQLite and PostgreSQL stores.

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "core/result.h"
#include "store/store.h"

namespace gpufleet::store {

// Concurrent submits wait in a queue; one of them (the leader) hands up to `max_batch` queued
// jobs to a commit function, which writes them in one transaction and returns one result per job
// in order. Each caller returns its own job's result only after that transaction has ended.
// Results are handed to their callers under the queue's lock: a waiter never reads a result while
// the leader is still writing it.
class SubmitGroup {
 public:
  using Commit =
      std::function<std::vector<core::Result<AddedJob>>(const std::vector<const JobRecord*>&)>;

  // `commit` must return exactly one result per job it was given; if it throws, every job of its
  // batch fails with the exception's message.
  SubmitGroup(std::size_t max_batch, Commit commit)
      : max_batch_(max_batch == 0 ? 1 : max_batch), commit_(std::move(commit)) {}

  // Adds `job` to the next batch, leading a batch if none is being written, and returns its
  // result.
  core::Result<AddedJob> Add(const JobRecord& job);

 private:
  struct Pending {
    const JobRecord* job;
    std::optional<core::Result<AddedJob>> result;  // written and read under mutex_ only
  };

  const std::size_t max_batch_;
  const Commit commit_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Pending*> queue_;
  bool leader_active_ = false;
};

}  // namespace gpufleet::store

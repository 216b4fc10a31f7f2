#pragma once
// `WorkerPool<Job>`: a fixed set of threads running `run(job)` for queued jobs in FIFO order.
// Jobs are move-only values (a request and its connection id), so no std::function per job.
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gpufleet::net {

template <typename Job>
class WorkerPool {
 public:
  WorkerPool(int threads, std::function<void(Job&)> run) : run_(std::move(run)) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
  }
  // Drops the jobs still queued and waits for the running ones.
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      jobs_.clear();
    }
    ready_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Push(Job job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    ready_.notify_one();
  }

 private:
  void Work() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
        if (stop_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      run_(job);
    }
  }

  std::function<void(Job&)> run_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gpufleet::net

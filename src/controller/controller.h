#pragma once
// `Controller`: accepts jobs into the store, keeps the waiting ones in the shared `Scheduler`,
// and on every pass (woken by a submit or a cancel, else every 50 ms) reaps finished jobs,
// schedules, and starts the chosen jobs through a `NodeExecutor`. Every state change goes
// through the store's compare-and-set transitions first, so the store is the truth and a crash
// at any point leaves a state the next start can read.
//
// This first cut drives one node (the machine it runs on). At start, RUNNING jobs are re-adopted
// through the executor (they outlive a crashed or stopped controller); one that cannot be (its
// process gone without an exit record), or one caught between SCHEDULED and RUNNING, is marked
// LOST and not restarted, so that no job ever runs twice.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/result.h"
#include "core/rng.h"
#include "sched/placement_policy.h"
#include "sched/queue_policy.h"
#include "sched/schedule.h"
#include "store/store.h"

namespace gpufleet::controller {

// How jobs run on the controller's node. In `gpufleet up` it is the agent's Runner.
class NodeExecutor {
 public:
  virtual ~NodeExecutor() = default;
  // Where a started job runs: recorded in the store so a restarted agent can re-adopt it.
  struct Started {
    int64_t pid = 0;
    uint64_t pid_start = 0;
  };
  // Starts `job` on the GPUs in `job.gpu_indices`, logging to `log_path`.
  virtual core::Result<Started> Start(const store::JobRecord& job, const std::string& log_path) = 0;
  // Re-adopts a job started before a restart (its `pid`, `pid_start`): true when it still runs or
  // has ended leaving its exit status (Poll reports it); false when how it ended is unknown.
  virtual bool Adopt(const store::JobRecord& job, const std::string& log_path) = 0;
  // SIGTERM now, SIGKILL after `grace_s`; false when the job is not running here.
  virtual bool Stop(int64_t job_id, double grace_s) = 0;
  struct Exit {
    int64_t job_id = 0;
    int exit_code = 0;
    bool stopped = false;  // ended after Stop
  };
  // Jobs that ended since the last call; never blocks.
  virtual std::vector<Exit> Poll() = 0;
};

struct ControllerOptions {
  std::string data_dir;
  std::string node_name = "local";
  int gpus = 0;
  std::string gpu_model;  // catalog name or alias; unknown: the generic model
  bool simulated = false;
  std::string queue_policy = "priority";
  std::string placement_policy = "gpupacking";
  double stop_grace_s = 10;
};

struct NodeView {
  std::string name;
  int gpus = 0;
  int free_gpus = 0;
  std::string gpu_model;
  bool simulated = false;
  int running_jobs = 0;
};

struct ControllerStats {
  int64_t passes = 0;
  int64_t started = 0;
  int64_t finished = 0;
  int64_t waiting = 0;
  int64_t running = 0;
};

class Controller {
 public:
  // Fails when a policy name is unknown.
  static core::Result<std::unique_ptr<Controller>> Create(store::Store& store,
                                                          NodeExecutor& executor,
                                                          ControllerOptions options);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Rebuilds the queue from the store (see the header comment); call once before Start.
  core::Result<bool> Recover(int64_t now_ms);
  void Start();  // the scheduling thread
  void Stop();

  // Why `job` can never run here (naming the field), or nothing: a job asking more GPUs than a
  // node has is refused at submit, not left waiting forever.
  std::optional<std::pair<std::string, std::string>> Unrunnable(const store::JobRecord& job) const;
  // Commits `job` (PENDING) and queues it; the id is returned after the commit.
  core::Result<int64_t> Submit(store::JobRecord job);
  // Cancels a live job (a running one is stopped with the grace period and becomes CANCELLED
  // when it has ended); returns the state after the request. Idempotent on ended jobs.
  core::Result<store::JobState> Cancel(int64_t id, int64_t now_ms);
  // One pass, on the caller's thread (tests).
  void RunOnce(int64_t now_ms);

  NodeView Node() const;
  ControllerStats Stats() const;
  std::string LogPath(int64_t id) const;
  store::Store& store() { return store_; }

 private:
  Controller(store::Store& store, NodeExecutor& executor, ControllerOptions options,
             std::unique_ptr<sched::QueuePolicy> queue_policy,
             std::unique_ptr<sched::PlacementPolicy> placement_policy);
  void Loop();
  void PassLocked(int64_t now_ms);
  sched::QueuedJob QueuedOf(const store::JobRecord& job) const;

  store::Store& store_;
  NodeExecutor& executor_;
  ControllerOptions options_;
  std::unique_ptr<sched::QueuePolicy> queue_policy_;
  std::unique_ptr<sched::PlacementPolicy> placement_policy_;
  std::string model_name_;

  mutable std::mutex mutex_;
  core::ClusterSnapshot cluster_;
  sched::Scheduler scheduler_;
  core::Rng rng_{1};
  std::map<int64_t, store::JobRecord> waiting_;  // by id, as queued
  std::vector<sched::RunningJob> running_;
  std::map<int64_t, bool> cancel_requested_;
  ControllerStats stats_;

  // Committed submits wait here for the next pass, so acknowledging a submit never waits for a
  // pass (whose store writes can take a while) to release `mutex_`.
  std::mutex inbox_mutex_;
  std::vector<store::JobRecord> inbox_;

  std::condition_variable wake_;
  bool stop_ = false;
  std::atomic<bool> woken_{false};
  std::thread thread_;
};

// Milliseconds since the epoch, for callers that stamp store records.
int64_t NowMs();

}  // namespace gpufleet::controller

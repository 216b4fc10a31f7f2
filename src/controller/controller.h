#pragma once
// `Controller`: accepts jobs into the store, keeps the waiting ones in the shared `Scheduler`,
// and on every pass (woken by a submit, a cancel or a heartbeat, else every 50 ms) settles ended
// jobs, expires silent nodes, schedules, and hands the chosen jobs to their nodes' agents through
// their next heartbeat reply. Every node runs the same agent (agent/node_agent.h): `gpufleet up`'s
// own node is an agent in the controller's process (in_process_link.h), the others reach it over
// HTTP; so a job is launched, logged, recovered and fenced one way wherever it runs. Every state change
// goes through the store's compare-and-set transitions first, so the store is the truth and a
// crash at any point leaves a state the next start can read.
//
// A job of N nodes has N ranks, one per node; it is RUNNING once every rank runs and ends once
// every rank has ended (a failing rank stops the others). No job ever runs twice: every
// placement has a new epoch, agents stop what the controller no longer lists (fencing), and a
// job whose node is lost is requeued only when it was submitted as restartable.
#include <atomic>
#include <bit>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "advise/advisor.h"
#include "advise/own_hardware.h"
#include "advise/usage_series.h"
#include "controller/gpu_history.h"
#include "controller/job_logs.h"
#include "controller/node_registry.h"
#include "core/cluster.h"
#include "core/container.h"
#include "core/node.h"
#include "core/result.h"
#include "core/rng.h"
#include "net/node_protocol.h"
#include "scale/planner.h"
#include "sched/explain.h"
#include "sched/placement_policy.h"
#include "sched/queue_policy.h"
#include "sched/queued_job.h"
#include "sched/runtime_predictor.h"
#include "sched/schedule.h"
#include "sched/workload_learner.h"
#include "sched/workload_profile.h"
#include "store/store.h"

namespace gpufleet::controller {

struct ControllerOptions {
  std::string data_dir;
  // The node whose agent runs in this process (`gpufleet up`: "local"), whose heartbeats come
  // through an InProcessLink; no remote agent may take its name. "" for none (`gpufleet
  // controller`: every node is a remote agent).
  std::string local_node;
  // Called whenever the local node has news (work to start or stop), under the controller's lock:
  // it must not block or call the controller (`gpufleet up` writes an eventfd its agent waits
  // on). May be empty.
  std::function<void()> on_local_node_change;
  std::string queue_policy = "priority-backfill";
  // Which images and mount sources container jobs may use, and whether nodes may pull images
  // (core/container.h); the default allows no container job.
  core::ContainerPolicy containers;
  // The best of the simulator's placement policies on the openb traces, and live as well
  // (bench/results/live_placement.md).
  std::string placement_policy = "fgd-balance";
  // The workload fragmentation-aware placement (fgd, fgd-balance) measures nodes against; null:
  // learnt from the jobs submitted (sched::WorkloadLearner), as they arrive, and at a restart
  // from the succeeded jobs in the store.
  std::shared_ptr<const sched::WorkloadProfile> workload_profile;
  // Seconds between SIGTERM and SIGKILL when a job is cancelled or preempted (its checkpoint).
  double stop_grace_s = 10;
  // An elastic job (min_gpus) grows into idle GPUs only after running this long since its last
  // start or resize: each resize is a checkpoint-restart (sched::Scheduler::SetElasticGrowAfter).
  double elastic_grow_after_s = 300;
  // Fair-share policies: each queue's weight (its quota is its share of the cluster); a queue
  // not named weighs 1.
  std::map<std::string, double> queue_weights;
  // The highest priority a non-admin user may give a job: `user_max_priority` for the users it
  // names, `max_user_priority` for the others (0 by default: users can only lower their jobs'
  // priority, like `nice`; admins set any).
  int max_user_priority = 0;
  // The live (pending, scheduled or running) jobs one non-admin user may hold at once, as Slurm's
  // MaxSubmitJobs: each waiting job is kept whole in the controller's memory (argv and env up to
  // 256 KiB each), so that without a cap one user could take it all. 0: no cap.
  int64_t max_live_jobs_per_user = 10000;
  // The bytes of argv and env one non-admin user's jobs may keep in the store together, live and
  // ended (until --job-retention removes them; Store::JobArgsBytesOf): without it one user
  // submitting and cancelling in a loop, within the write rate, adds up to 512 KiB of argv and
  // env a job (several times that as stored JSON, which escapes control characters) for good. A
  // submit that would pass it is refused (kForbidden, field "jobs"). 0: no cap.
  int64_t max_job_bytes_per_user = int64_t{1} << 30;
  // The bytes of logs one user's *running* jobs may hold on the controller together (up's
  // --log-quota; 0: no quota). A log chunk is taken up to it; the rest waits on its node (within
  // the node's own --log-limit, told by LogAck::held_back) until the user's running jobs hold
  // less; a job that ends first loses the rest (its node deletes its copy). Ended jobs' logs are
  // LogSweeper's to keep within the same quota, so that a user holds at most twice it between
  // sweeps.
  int64_t log_quota_bytes = 0;
  std::map<std::string, int> user_max_priority;
  // A remote node silent for this long is lost: its jobs become LOST (and PENDING again when
  // restartable), and whatever it still runs of them is stopped when it returns.
  int64_t lease_ms = 10000;
  // Idle reclaim (Run:ai's idle GPU timeout): a running job whose GPUs all stay idle (SM below
  // kIdleSmPct in every sample) this long is first warned, at 80% of it (an event and a metric),
  // then stopped like a cancel and ends CANCELLED, "idle for 30 min". 0: off. A queue named in
  // `queue_idle_timeout_ms` has that timeout instead (0 there: the queue is exempt), so only the
  // admin who starts the controller can exempt jobs, by queue.
  int64_t idle_timeout_ms = 0;
  std::map<std::string, int64_t> queue_idle_timeout_ms;
  // A running job's usage series is written to the store at least this often (and when it ends):
  // a controller restart loses at most this much of it.
  int64_t usage_flush_ms = 5 * 60'000;
  // What owning GPUs costs, for `advise --sizing` (--own-hardware FILE; defaults otherwise, see
  // data/own_hardware.example.conf).
  advise::OwnHardware own_hardware;
  // Nodes the fleet may grow to (an autoscaler's groups, each `max` times): a job that fits them
  // is not refused at submit for want of a node that exists now.
  std::vector<core::NodeSpec> growth_nodes;
  // When set, what a job that is not restartable may count on at submit: the nodes the spend cap
  // buys at on-demand prices (the autoscaler puts only restartable jobs on spot). Unset:
  // growth_nodes.
  std::optional<std::vector<core::NodeSpec>> growth_nodes_on_demand;
  // Milliseconds since the epoch, for what the controller times itself (submits, launches, the
  // passes of its own thread); empty: the system clock. Tests drive a fake one with RunOnce.
  std::function<int64_t()> clock;
  // Controllers sharing a store (server/leader_lease.h): whether this one may still act as the
  // leader; a heartbeat is not answered (503) when it may not, so that a controller whose lease
  // ran out while it held the reply tells no agent what to run. Unset: always.
  std::function<bool()> may_act;
  // Called (with the controller's lock held; it must not call back) when the store refused or
  // failed to record job state changes that this controller's memory already holds: a shared
  // store's controller then stands down and recovers from the store. Unset (the embedded store),
  // the changes wait in the write buffer and every later flush tries them again first.
  std::function<void(const std::string& why)> on_store_write_failed;
  // Submits a pass takes into the queue; more wait for the next pass, which follows at once.
  int max_arrivals_per_pass = 5000;
  // Called with the controller's lock released, just before a pass commits the starts it
  // decided (`committed` false) and just after (true), before it launches them (tests act in
  // that window: heartbeats, cancels).
  std::function<void(bool committed)> start_commit_window;
};

struct NodeView {
  std::string name;
  std::string address;
  int gpus = 0;
  int free_gpus = 0;
  std::string gpu_model;
  bool simulated = false;
  bool local = false;      // its agent runs in the controller's process (ControllerOptions)
  std::string limits;      // "cgroup-v2", "cgroup-v2-memory", "cgroup-v1", or "none" (unlimited,
                           // measured from /proc)
  std::string limits_why;  // why not cgroups, when "none"; why no CPU limits, "cgroup-v2-memory"
  std::vector<std::string> images;  // container images the node holds (its agent's last word)
  // GPUs nothing new is placed on: unhealthy ones (cause "health": the agent's verdict; their
  // jobs were stopped) and those an admin drained (cause "admin").
  struct DrainedGpu {
    int gpu = 0;
    std::string cause;  // "health" or "admin"
    std::string reason;
    std::string by;         // the admin (admin drains)
    int64_t since_ms = 0;  // admin drains
  };
  std::vector<DrainedGpu> drained;
  // READY, LOST, RETIRED (the autoscaler deleted it), or UNKNOWN (named by a job, not heard from
  // since a restart)
  std::string state;
  int64_t idle_since_ms = 0;  // READY and running nothing since then; 0: busy or not ready
  int64_t epoch = 0;
  int64_t last_seen_ms = 0;  // 0: never
  int running_jobs = 0;
  std::string samples_json;  // the agent's latest GPU document, or ""
  // Each GPU now (by index): its latest figures (-1: none yet), its health, and the job holding
  // it (0: none; under GPU sharing, one of them).
  struct GpuNow {
    double util_pct = -1;
    int64_t mem_used_mib = -1, mem_total_mib = -1;
    bool healthy = true;
    int64_t job = 0;
    std::string job_user;
  };
  std::vector<GpuNow> gpus_now;
};

// What the controller tells the dashboard's live stream (controller/event_hub.h). Called under
// the controller's lock, so an implementation only records and returns: it must not block or
// call the controller.
class ControllerEvents {
 public:
  virtual ~ControllerEvents() = default;
  // Job `id` entered `state` (PENDING at submit, then every committed change).
  virtual void JobChanged(int64_t id, store::JobState state, int64_t time_ms) = 0;
  // Node `name`'s agent reported (its GPU figures may have changed).
  virtual void NodeReported(const std::string& name) = 0;
  // The controller holds `size` bytes of job `id`'s (rank 0) log now.
  virtual void LogGrew(int64_t id, int64_t size) = 0;
};

struct ControllerStats {
  int64_t passes = 0;
  int64_t started = 0;
  int64_t finished = 0;
  int64_t waiting = 0;
  int64_t running = 0;
  int64_t nodes_lost = 0;
  int64_t preempted = 0;  // running jobs stopped for a job the queue policy ranks higher
  int64_t resized = 0;    // elastic jobs stopped to restart on more or fewer GPUs
  int64_t heartbeats = 0;
  int64_t store_errors = 0;    // commits of state changes that failed
  int64_t writes_refused = 0;  // state changes the store refused: its row had moved on
  int64_t log_chunks_held_back = 0;  // log chunks not taken: their user was over the log quota
  // The last pass that started jobs: how long it held the controller's lock (deciding, and
  // every other step), and how long the commit of its starts took (with the lock released).
  double last_start_pass_ms = 0, last_start_commit_ms = 0;
  int64_t gpus_drained_health = 0;  // now: GPUs drained because their agent says unhealthy
  int64_t gpus_drained_admin = 0;   // now: GPUs an admin drained
  int64_t health_stops = 0;         // jobs stopped because a GPU of theirs became unhealthy
  int64_t idle_warnings = 0;        // jobs warned that their GPUs are idle
  int64_t idle_reclaims = 0;        // jobs stopped by the idle reclaim
  // Now: ids remembered for inbox entries yet to arrive (retried submits, cancels before queueing).
  int64_t unarrived_remembered = 0;
  // GPU-hours of ended jobs: allocated, and of those used (allocated x mean SM utilization).
  double gpu_h_allocated = 0, gpu_h_used = 0;
  // Running jobs' GPU efficiency so far (mean SM % over their GPU-samples), by job.
  struct JobEfficiency {
    int64_t id = 0;
    std::string user;
    double sm_pct = 0;
  };
  std::vector<JobEfficiency> running_efficiency;
};

class Controller {
 public:
  // Fails when a policy name is unknown.
  static core::Result<std::unique_ptr<Controller>> Create(store::Store& store,
                                                          ControllerOptions options);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Rebuilds the queue from the store; call once before Start. Placed and running jobs wait for
  // their node's next heartbeat for one lease (its agent re-adopts them, or reports them lost),
  // and are handled as on a lost node if it does not come.
  core::Result<bool> Recover(int64_t now_ms);
  void Start();  // the scheduling thread
  // Stops that thread, then tries once to write what waits (state changes, then every running
  // job's usage series so far), unless another controller leads now; a failure there calls no
  // on_store_write_failed. The destructor only stops the thread.
  void Stop();

  // Why `job` can never run here (naming the field), or nothing: a job asking more GPUs per node
  // than any known node has, or more nodes than have that many GPUs, is refused at submit, not
  // left waiting forever (a big enough impossible job would block every queue behind its
  // reservation). Where queues are declared (ControllerOptions::queue_weights), a job for any
  // other queue but "default" is refused too.
  std::optional<core::Error> Unrunnable(const store::JobRecord& job) const;
  // Commits `job` (PENDING) and queues it; the id is returned after the commit. `within_cap`
  // (a non-admin's submit): refused (kForbidden, field "jobs") when `job.user` already holds
  // ControllerOptions::max_live_jobs_per_user live jobs, or when its argv and env would take the
  // user's jobs past ControllerOptions::max_job_bytes_per_user (a retry of a submit that went
  // through is that job, and answered with its id).
  core::Result<int64_t> Submit(store::JobRecord job, bool within_cap = false);
  // The highest priority non-admin `user` may set (ControllerOptions::max_user_priority).
  int MaxUserPriority(const std::string& user) const;
  // Cancels a live job (a running one is stopped with the grace period and becomes CANCELLED
  // when it has ended); returns the state after the request. Idempotent on ended jobs.
  core::Result<store::JobState> Cancel(int64_t id, int64_t now_ms);
  // Removes ended job `id` for good, as --job-retention does later: its logs, then its row,
  // history, ranks and usage (and its argv and env no longer count against its user's byte cap).
  // The caller has checked who may. Errors: kNotFound for no such job; kInvalid naming "state"
  // for one not SUCCEEDED, FAILED, CANCELLED or LOST; kUnavailable when a log or the store could
  // not be written (what is left stays, and a retry finishes).
  core::Result<bool> RemoveEndedJob(int64_t id, int64_t now_ms);
  // One pass, on the caller's thread (tests).
  void RunOnce(int64_t now_ms);
  // An agent's heartbeat: registers or revives its node, takes its jobs' states and log chunks,
  // and answers with everything that node should run (held up to `beat.wait_ms` until there is
  // news for it). `in_process`: it comes from the agent in this process, the only one that may
  // name ControllerOptions::local_node. Errors name the bad field.
  core::Result<net::HeartbeatReply> Heartbeat(const net::Heartbeat& beat, int64_t now_ms,
                                              bool in_process = false);

  std::vector<NodeView> Nodes() const;
  ControllerStats Stats() const;
  // Admin drain, as Slurm's: nothing new is placed on GPU `gpu` of node `node` (-1: all of its
  // GPUs) until it is undrained; jobs running there finish. Kept across restarts. Returns the
  // GPUs drained; errors (kNotFound, kInvalid naming "gpu") for an unknown node or GPU.
  core::Result<std::vector<int>> Drain(const std::string& node, int gpu, const std::string& reason,
                                       const std::string& by);
  // The run time predicted for job `id` while it waits or runs (fixed when it was first queued);
  // none for a job that has ended or that this controller does not hold.
  std::optional<sched::RuntimePrediction> Prediction(int64_t id) const;
  // How well predictions did: over finished jobs that had one (SUCCEEDED jobs, their history in
  // the store replayed at start, each predicted before it was learnt from).
  struct PredictorView {
    int64_t learnt = 0;   // finished jobs learnt from
    int64_t checked = 0;  // of those, predicted beforehand (the errors below are over these)
    double median_relative_error = 0;  // |predicted - actual| / actual, the last 1,000
    double mean_absolute_error_s = 0;
  };
  PredictorView Predictor() const;
  // Ends admin drains of those GPUs, and accepts their present health problem: an unhealthy GPU
  // is placed on again until its agent reports a different problem (which drains it again).
  core::Result<std::vector<int>> Undrain(const std::string& node, int gpu);
  // Job `job`'s usage series and what the advisor knows of it: live while it runs, else as stored
  // when it ended (or last flushed); nothing when it was never measured.
  struct JobUsageView {
    advise::JobUsage usage;
    advise::JobFacts facts;
    bool live = false;
    double gpu_h_alloc = 0, gpu_h_used = 0;
  };
  core::Result<std::optional<JobUsageView>> Usage(const store::JobRecord& job);
  // Why each waiting job waits (`sched::ExplainQueue`), in the scheduler's order, with whose job
  // it is (the API hides other users' jobs' names from non-admins). Takes the controller's lock
  // for the whole of it: the decisions a pass would make now (`Schedule` on a copy of the
  // random generator: nothing changes) and the explanation; for 10,000 waiting jobs on 1,000
  // nodes tens of milliseconds (sched/explain_test), during which passes and heartbeats wait.
  // So that callers cannot keep the lock taken (a user asking in a loop, from many
  // connections), one explanation is made at a time, and one made less than
  // `kExplainReuseMs` ago is answered again instead of made anew when no pass since has changed
  // what it depends on (starts, ends, preemptions, resizes, the waiting and running counts, each
  // node's liveness and drained GPUs), or, whatever changed, when it is less than
  // `kExplainFloorMs` old (a cancel and a submit within one pass, or a priority change, are seen
  // within the second). Passes run every 50 ms, so "no pass since" alone made the reuse all but
  // void.
  // Running jobs end by their time limit, or by their predicted run time where the predictor has
  // learnt the class (not its fixed prior).
  struct QueueExplanation {
    sched::Explanation why;
    std::string user;
    std::string name;
    std::string queue;
    int gpus = 0;   // per node
    int nodes = 1;
    // Whether the job it waits on (`why.fits_after_job`) is predicted from run times that mix in
    // other users' (RuntimePrediction::MixesOtherUsersJobs), read with the explanation itself.
    bool fits_after_mixed = false;
  };
  std::vector<QueueExplanation> ExplainQueue(int64_t now_ms) const;
  static constexpr int64_t kExplainReuseMs = 1000;
  static constexpr int64_t kExplainFloorMs = 250;
  // How many explanations ExplainQueue has made (not answered again), for tests and /metrics.
  int64_t ExplanationsMade() const;
  // For the autoscaler (controller/autoscaler.h). What it plans from: the cluster as placement
  // sees it, each node's name, and since when each alive node has run nothing (-1: busy or not
  // alive), with the waiting jobs.
  struct ScaleView {
    core::ClusterSnapshot cluster;
    std::vector<std::string> names;      // by node index
    std::vector<uint8_t> alive;          // by node index
    std::vector<int64_t> idle_since_ms;  // by node index
    std::vector<scale::WaitingJob> waiting;
    // The jobs running now (not being stopped), with their expected remaining run time (from the
    // run-time prediction made when each was queued; NaN when none) and what a move costs them
    // (the stop grace period and a restart), for consolidation.
    std::vector<scale::RunningJobView> running;
  };
  ScaleView ScaleSnapshot(int64_t now_ms) const;
  // Retiring an idle node takes three steps. BeginRetire drains every GPU of node `name` when it
  // is alive and runs nothing (false, changing nothing, when a job runs there: nothing can be
  // placed on it in between, the check and the drain are under one lock); after the provider
  // deleted the instance, FinishRetire marks it RETIRED (not alive, never expected back) and
  // revokes its credentials; AbortRetire undrains it when the delete is given up.
  core::Result<bool> BeginRetire(const std::string& name);
  void FinishRetire(const std::string& name, int64_t now_ms);
  void AbortRetire(const std::string& name);
  // A spot notice for node `name`: every GPU is drained, and each restartable job running there
  // is stopped (SIGTERM, the grace period, SIGKILL) and queued again, as a preempted one. Other
  // jobs run on until the node goes. Returns how many jobs were stopped.
  core::Result<int> Evacuate(const std::string& name, const std::string& reason);
  // Who hears of job, node and log changes (null: nobody); set and cleared under the lock, so
  // once SetEvents(nullptr) returns no call is under way.
  void SetEvents(ControllerEvents* events);
  // Each GPU of job `job` (as placed) with its samples while the job ran, as far as the
  // controller still holds them (GpuHistory: the last hour, in memory).
  struct GpuSeries {
    std::string node;
    int index = 0;
    GpuHistory::Series series;
  };
  std::vector<GpuSeries> JobGpuSeries(const store::JobRecord& job) const;
  // Each queue with jobs waiting or running, or with a weight: its fair-share weight and what it
  // holds and waits for now.
  struct QueueNow {
    std::string name;
    double weight = 1;
    int running = 0, waiting = 0;
    double gpus_allocated = 0;  // GPUs its running jobs hold (shares as fractions)
    double gpus_waiting = 0;    // GPUs its waiting jobs ask for
  };
  std::vector<QueueNow> Queues() const;
  // Where the controller keeps rank `rank`'s log of job `id` (rank 0: what `logs` shows).
  std::string LogPath(int64_t id, int rank = 0) const;
  const JobLogs& Logs() const { return logs_; }
  store::Store& store() { return store_; }
  const ControllerOptions& options() const { return options_; }
  // The GPU-service (GPU-seconds) job `job` received in all when it succeeded after a last run of
  // `last_run_s`: its earlier runs' (`attained_gpu_s`) plus the last run's on the GPUs its
  // placement held (an elastic job's may be fewer than it asks; its ask if it has no placement;
  // none for a placed CPU-only job). What learning queue policies (`gittins`) learn from, counted
  // as the replay counts it.
  static double ServiceAtSuccess(const store::JobRecord& job, double last_run_s);

 private:
  using NodeEntry = RegisteredNode;
  struct Rank {
    int node = 0;
    core::GpuMask gpus = 0;
    bool started = false;    // known to have run (then never started again)
    bool ended = false;
    bool lost = false;     // ended without a known exit (its state on the node was lost)
    bool stopped = false;  // ended after the controller asked it to stop
    // Its slice is taken on cluster_: not while its node is not alive (the node's blocker holds
    // it), nor when the node came back too small for it. A job with a rank not held is never
    // handed to the scheduler as running: releasing that rank there would corrupt the snapshot.
    bool held = false;
    int exit_code = 0;
    int64_t pid = 0;
    uint64_t pid_start = 0;
    int64_t ended_ms = 0;
    int64_t log_acked = 0;  // bytes of its log the controller holds
    int64_t log_total = 0;  // bytes the agent reported
    bool log_held_back = false;  // its last chunk was cut at the user's log quota
    std::string reason;
    // Usage of its GPUs while it ran: utilization summed over GPU-samples, and the peak of its
    // GPUs' memory in use together.
    int64_t gpu_samples = 0;
    double util_sum = 0;
    int64_t mem_peak_mib = 0;
    core::HostUsage host_usage;  // the latest its node reported (final once ended)
  };
  struct Active;
  static bool AllRanksHeld(const Active& a);
  // When figure `f` was sampled, for the GPU history: its own time if it lies within ten minutes
  // of `now_ms`, else `now_ms`.
  static int64_t FigureTimeMs(const net::GpuFigure& f, int64_t now_ms);
  struct Active {
    store::JobRecord job;
    sched::QueuedJob queued;
    std::vector<Rank> ranks;
    bool cancel = false;
    bool stopping = false;
    bool timed_out = false;   // stopped at its time limit
    bool preempting = false;  // stopped to make room for a job the queue policy ranks higher
    std::string resizing;     // with preempting: stopped for a resize, why ("" : a preemption)
    std::string health_stop;  // stopped because a GPU of its became unhealthy: why
    // Its usage series (from its start; resumed from the store after a restart), when last
    // written, and the idle reclaim's view: since when every sample of its GPUs was idle (0:
    // busy, or not measured yet) and whether it was warned.
    std::optional<advise::UsageSeriesBuilder> usage;
    int64_t usage_flushed_ms = 0;
    int64_t idle_since_ms = 0;
    bool idle_warned = false;
    std::string idle_stop;  // stopped by the idle reclaim: why
    // Planned, its placement not durable yet: no agent hears of it until LaunchLocked.
    bool committing = false;
  };

  Controller(store::Store& store, ControllerOptions options,
             std::unique_ptr<sched::QueuePolicy> queue_policy,
             std::unique_ptr<sched::PlacementPolicy> placement_policy);
  void Loop();
  // One pass, `lock` (on mutex_) held on entry and on return. The commit of the starts it decides
  // runs with the lock released, so that heartbeats, submits and API reads go on meanwhile;
  // passes never overlap.
  void Pass(std::unique_lock<std::mutex>& lock, int64_t now_ms);
  sched::QueuedJob QueuedOf(const store::JobRecord& job) const;
  // What `job` asks of the cluster (sched::BuildQueuedJob's input).
  static sched::JobAsk AskOf(const store::JobRecord& job);
  int NodeIndexLocked(const std::string& name) { return nodes_.IndexOf(name); }
  void RebuildClusterLocked();
  // Placing a job takes three steps: plan (allocate, record SCHEDULED in the write buffer), then
  // after the buffer is committed launch it, or unplan it (back to the queue) when it is not.
  void PlanLocked(store::JobRecord job, const std::vector<sched::Allocation>& placement);
  void LaunchLocked(int64_t id);
  // A new job, at its submit and its first run, finds no log of its id here, unless the folder
  // outlived its store: one made anew beside it numbers jobs from 1 again. Such a log (and a
  // removal note) is an earlier job's, perhaps another user's: this job's output would be
  // appended to it and shown with it. Removes those of its `ranks` ranks, saying so.
  void EraseEarlierJobsLogs(int64_t id, int ranks) const;
  void UnplanLocked(int64_t id);
  // Takes a job out of the queue and forgets what the queue kept of it (its prediction, its
  // requeue time); whether it was queued.
  bool DropWaitingLocked(int64_t id);
  // State changes wait in `writes_` and are committed together by FlushLocked (false when the
  // store fails): at most a few commits per pass or heartbeat, however many jobs change.
  void WriteLocked(int64_t id, store::JobState from, store::JobState to, store::JobUpdate update);
  // `refused`, when given, collects the jobs whose compare-and-set did not apply. When the store
  // fails, the writes stay buffered, ahead of later ones, and the next flush tries them again;
  // while the store rests (NoteStoreLocked) a flush returns false at once, unless `even_resting`.
  bool FlushLocked(int64_t now_ms, std::vector<int64_t>* refused = nullptr,
                   bool even_resting = false);
  // After the store failed to answer (kUnavailable), writes rest for a pause that doubles from
  // 250 ms to 20 s (`answered` false), and flushes in between return false at once: each try may
  // wait the store's busy timeout (SQLite's: 5 s) with the lock held, and heartbeats wait behind
  // it, so a long outage holds the lock at most a fifth of the time.
  void NoteStoreLocked(bool answered);
  bool StoreRestingLocked(int64_t now_ms) const;
  static constexpr int64_t kMaxStorePauseMs = 20000;
  // Whether a write about job `id` waits unrecorded in the buffer.
  bool WriteWaitsLocked(int64_t id) const;
  // Whether a write about a job `beat` reports still waits unrecorded (the reply must wait too).
  bool UnrecordedLocked(const net::Heartbeat& beat) const;
  // The bytes of log `user`'s running jobs may still bring here under
  // ControllerOptions::log_quota_bytes (the largest int64 without a quota).
  int64_t LogRoomLocked(const std::string& user) const;
  // Takes `a`'s logs out of live_log_bytes_ (it leaves active_; its logs stay on disk, LogSweeper's
  // from now on) or, with `sign` 1, puts them in (Recover).
  void CountLiveLogLocked(const Active& a, int sign = -1);
  // The bytes of log `a`'s ranks have brought here (their log_acked).
  static int64_t LogBytesOf(const Active& a);
  // Adds `bytes` (negative: takes them) to `user`'s live_log_bytes_.
  void AddLiveLogLocked(const std::string& user, int64_t bytes);
  // `a` is requeued: its run's logs stay counted, as an earlier run's (earlier_logs_).
  void KeepEarlierLogsLocked(const Active& a);
  // Job `id` ended (or will not run): its earlier runs' logs leave live_log_bytes_.
  void ForgetEarlierLogsLocked(int64_t id);
  // Drops the buffered marks (same-state updates, such as PREEMPTING) of `ids`: for a caller
  // whose flush failed and that undoes those marks in memory rather than retrying them.
  void ForgetMarksLocked(const std::vector<int64_t>& ids);
  // What FlushLocked does once the store has answered `done` for `writes`: events, `refused`,
  // the failure's count and report.
  bool CommittedLocked(const std::vector<store::TransitionRequest>& writes,
                       const core::Result<std::vector<bool>>& done, int64_t now_ms,
                       std::vector<int64_t>* refused);
  net::EnvList LaunchEnvLocked(const Active& a, int rank) const;
  void StopRanksLocked(Active& a);
  int64_t Now() const;  // options_.clock, else the system clock
  static sched::JobTraits TraitsOf(const store::JobRecord& job);
  // Learns job `job`'s run time (it SUCCEEDED after `runtime_s`), first scoring its prediction.
  void LearnRuntimeLocked(const store::JobRecord& job, double runtime_s,
                          const sched::RuntimePrediction* predicted);
  // Whether nothing new may be placed on GPU `gpu` of `n`, and why ("" when it may).
  static std::string DrainReason(const NodeEntry& n, int gpu);
  // The agent's health verdicts in `figures`: newly unhealthy GPUs are drained (an event, and
  // their jobs stopped: requeued if restartable, FAILED otherwise), recovered ones undrained.
  void UpdateHealthLocked(int node, const std::vector<net::GpuFigure>& figures, int64_t now_ms);
  // The node index and GPUs that Drain/Undrain of (`node`, `gpu`) act on, or why none.
  core::Result<std::pair<int, std::vector<int>>> DrainTargetLocked(const std::string& node,
                                                                   int gpu) const;
  // Makes the snapshot hold exactly the node's drained GPUs that no job uses (a blocker each).
  void HoldDrainedLocked(int node);
  void TouchNodeLocked(int node);
  // Moves the job on as its ranks report: RUNNING once all run; ended once all have ended.
  void SettleLocked(int64_t id, int64_t now_ms);
  // A container job that started on a node with simulated GPUs gets an event saying that no GPU
  // device reached its container.
  void NoteSimulatedContainerLocked(const Active& a, int64_t now_ms);
  void EndLocked(int64_t id, store::JobState to, std::optional<int> exit_code, std::string reason,
                 int64_t now_ms);
  void NodeLostLocked(int node, int64_t now_ms);
  // Records node `node` in the store's registry (on registration, return, loss: not per beat).
  void PersistNodeLocked(int node, int64_t now_ms);
  // Counts `figures` (newer than the node's last) into the running ranks on `node`: their usage
  // summaries, their jobs' usage series and the idle reclaim's view.
  void AccountUsageLocked(int node, const std::vector<net::GpuFigure>& figures, int64_t now_ms);
  // Job `a`'s usage series builder, made at its start (nullptr while it is not running yet).
  advise::UsageSeriesBuilder* UsageOfLocked(Active& a);
  // The stored form of `a`'s usage so far, advised when `ended`.
  // GPU-hours `a` was allocated and used from its start to `now_ms` (its usage series exists).
  std::pair<double, double> GpuHoursLocked(const Active& a, int64_t now_ms) const;
  store::JobUsageRecord UsageRecordLocked(Active& a, int64_t now_ms, bool ended);
  void JoinLoop();  // stops the scheduling thread and waits for it
  bool stopping_ = false;  // Stop's last flush: a failed write does not call on_store_write_failed
  // Writes the series queued by ended jobs and those of running jobs not written for
  // options_.usage_flush_ms (a bounded number per pass). `last` (at Stop): every running job's,
  // tried once even while the store rests, and nothing is kept to retry.
  void FlushUsageLocked(int64_t now_ms, bool last = false);
  // Warns and stops jobs whose GPUs stayed idle past their idle timeout.
  void ReclaimIdleLocked(int64_t now_ms);
  // Whether a running elastic job holds fewer GPUs than its most while some GPU is free: the
  // scheduler is then asked even when nothing waits (it may lend idle GPUs to the job).
  bool ElasticMayGrowLocked() const;
  // The GPUs job `a` holds over its ranks (an elastic job's: fewer than it asks, at times).
  static int HeldGpus(const Active& a) {
    int gpus = 0;
    for (const Rank& r : a.ranks) gpus += std::popcount(r.gpus);
    return gpus;
  }
  int64_t IdleTimeoutMs(const store::JobRecord& job) const;
  // `job`, ended in state `from` (LOST or PREEMPTED), back to PENDING and into the queue.
  void RequeueLocked(const store::JobRecord& job, store::JobState from, const std::string& why);

  store::Store& store_;
  ControllerOptions options_;
  JobLogs logs_;
  std::string store_id_;  // store_.StoreId(), read at Recover; sent with each heartbeat reply
  // Each user's bytes of logs held here of jobs that have not ended: the runs in active_ (every
  // rank's log_acked) and, in earlier_logs_, the runs before a requeue.
  std::map<std::string, int64_t> live_log_bytes_;
  struct EarlierLogs {
    std::string user;
    int64_t bytes = 0;
  };
  // Per requeued job that has not ended: its earlier runs' log bytes, counted in live_log_bytes_
  // until it ends (else each restart would bring another quota's worth).
  std::unordered_map<int64_t, EarlierLogs> earlier_logs_;
  std::set<int64_t> log_held_back_;   // jobs whose log was held back (each told once on stderr)
  GpuHistory gpu_history_;            // under mutex_
  ControllerEvents* events_ = nullptr;  // under mutex_
  std::unique_ptr<sched::QueuePolicy> queue_policy_;
  std::unique_ptr<sched::PlacementPolicy> placement_policy_;

  mutable std::mutex mutex_;
  NodeRegistry nodes_;  // index = node index in `cluster_`; never shrinks
  core::ClusterSnapshot cluster_;
  sched::Scheduler scheduler_;
  core::Rng rng_{1};
  std::map<int64_t, store::JobRecord> waiting_;  // by id, as queued
  std::map<int64_t, Active> active_;             // SCHEDULED or RUNNING, by id
  // When each preempted job re-entered the queue (its waiting time for the starvation guard
  // counts from then); in memory: after a restart it counts from the submit.
  std::unordered_map<int64_t, int64_t> requeued_at_s_;
  // Jobs cancelled while PENDING before a pass took them into the queue (still in `inbox_`, or
  // a submit on its way there): the pass drops them when they arrive. With when each was added:
  // those kept past kForgetUnarrivedMs (an entry that never came) are forgotten.
  std::unordered_map<int64_t, int64_t> cancelled_unqueued_;
  // Run-time predictions (see Prediction): learnt from SUCCEEDED jobs; each job's prediction is
  // made when it is first queued and kept while it waits or runs (a policy's key must not change
  // while a job waits). Mutable: QueuedOf makes them.
  sched::RuntimePredictor predictor_;
  sched::WorkloadLearner workload_;  // unless options_.workload_profile is given
  mutable std::map<int64_t, sched::RuntimePrediction> predictions_;
  std::deque<double> prediction_relative_errors_;  // the last 1,000
  double prediction_abs_error_sum_ = 0;
  int64_t prediction_checked_ = 0;
  std::vector<store::TransitionRequest> writes_;
  int64_t store_retry_pause_ms_ = 0;  // NoteStoreLocked
  int64_t store_retry_at_ms_ = 0;
  std::vector<store::JobUsageRecord> usage_writes_;  // ended jobs' series, written by the next pass
  // What submit validation needs of the nodes, under its own lock so that a submit never waits
  // for a scheduling pass.
  struct NodeSummary {
    std::vector<core::NodeSpec> nodes;  // the nodes whose size is known
  };
  mutable std::mutex summary_mutex_;
  std::mutex capped_submit_mutex_;  // a cap's count and the submit it admits, one at a time
  // Per user, under capped_submit_mutex_: the bytes their jobs keep in the store as last counted
  // there (Store::JobArgsBytesOf), plus what their submits added since (counted before their
  // commit), and when it was counted. Retention only lowers the truth, so this is never below it
  // (a user's removal takes its job's bytes off under the same lock as its removal from the store);
  // a submit it would refuse counts again first, at most once a minute per user (the count reads
  // an index entry per job of the user, under the store's lock).
  struct ArgsBytesTally {
    int64_t bytes = 0;
    int64_t counted_ms = 0;
  };
  std::unordered_map<std::string, ArgsBytesTally> args_bytes_;
  // ExplainQueue's latest explanation: made at `explained_ms_`.
  mutable std::mutex explain_mutex_;  // one explanation made at a time; taken before mutex_
  mutable std::vector<QueueExplanation> explained_;
  mutable int64_t explained_ms_ = 0;
  // What the explanation was made from, as the counters of stats_ say (ExplainInputsLocked).
  mutable std::vector<int64_t> explained_inputs_;
  std::vector<int64_t> ExplainInputsLocked() const;
  mutable int64_t explanations_made_ = 0;  // ExplanationsMade
  NodeSummary summary_;
  ControllerStats stats_;

  // Committed submits wait here for the next pass, so acknowledging a submit never waits for a
  // pass (whose store writes can take a while) to release `mutex_`.
  mutable std::mutex inbox_mutex_;
  std::vector<store::JobRecord> inbox_;
  // Jobs a retried submit (its client token named a job added before) put in the inbox again,
  // as stored: at most once each, for this controller's life. Their first submit's entry may
  // arrive too, before or after, and either may come after a cancel, so the pass takes in an
  // entry of these only while the store still says PENDING. With when each was added: kept for
  // kForgetUnarrivedMs (a submit's entry reaches the inbox within a moment of its commit), then
  // forgotten, so that a user retrying submits in a loop does not grow it for good. Under
  // inbox_mutex_.
  std::unordered_map<int64_t, int64_t> retried_ids_;
  static constexpr int64_t kForgetUnarrivedMs = 3'600'000;
  int64_t unarrived_pruned_ms_ = 0;  // when the two above were last pruned (under mutex_)

  std::condition_variable wake_;
  std::condition_variable node_changed_;  // with mutex_: a node's version changed
  int held_heartbeats_ = 0;
  bool pass_running_ = false;        // with mutex_: a pass is on (maybe committing, unlocked)
  std::condition_variable pass_done_;  // with mutex_: pass_running_ became false
  bool stop_ = false;
  std::atomic<bool> woken_{false};
  std::thread thread_;
};

// Milliseconds since the epoch, for callers that stamp store records.
int64_t NowMs();

}  // namespace gpufleet::controller

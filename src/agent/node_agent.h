#pragma once
// `NodeAgent`: the agent's side of the controller protocol (net/node_protocol.h). Every interval
// it reports this node's GPUs and every job it holds, ships new log bytes, and applies the reply:
// it starts the assignments it does not run yet, stops those marked stop, and stops whatever the
// controller no longer lists (fencing: work from an older placement, or from before this node
// was declared lost, never runs beside its successor).
//
// Durability: each held job is recorded in `<data_dir>/assignments/<id>.json` before it is
// launched and again with its pid, so a restarted agent re-adopts its jobs (pid plus start time)
// instead of losing them; a job caught mid-launch, or whose process vanished without an exit
// record, is reported lost, never started a second time. Logs stay in `<data_dir>/logs/`.
//
// Self-fencing: when the controller has not answered for half its lease, restartable jobs are
// stopped here, because the controller is about to requeue them elsewhere. Their shims watch the
// same deadline, so this holds even while the agent is dead or frozen. Other jobs keep running
// through a controller outage (they are never run again elsewhere).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent/cgroup_limits.h"
#include "agent/job_usage.h"
#include "agent/runner.h"
#include "core/gpu_links.h"
#include "core/result.h"
#include "gpu/gpu_sample.h"
#include "net/controller_link.h"
#include "net/node_protocol.h"

namespace gpufleet::agent {

struct NodeAgentOptions {
  std::string node_name;
  std::string address;   // MASTER_ADDR for ranks started here
  std::string data_dir;  // assignments and logs
  int gpus = 0;
  std::string gpu_model;
  bool simulated = false;
  // Each GPU's character device by index (GpuProbe::DeviceNode; "" : none), so that a job is
  // kept off the GPUs it was not given where cgroups allow. Empty: none known (simulated GPUs).
  std::vector<std::string> gpu_device_nodes;
  // How the GPUs are connected, sent in every heartbeat; empty: not known (simulated GPUs).
  core::GpuLinks gpu_links;
  double fence_grace_s = 5;  // SIGTERM -> SIGKILL for fenced jobs
  std::string cgroup_root;   // "" : the agent's own cgroup (see CgroupLimits)
  int64_t long_poll_ms = 0;  // how long the controller may hold a heartbeat (0: answer at once)
  RunAsPolicy run_as;        // whose account each job runs under (its node_name is set here)
  int64_t log_limit_bytes = int64_t{1} << 30;  // each job's log is capped here (0: no cap)
  // Logs the controller did not take whole stay on the node for an admin, at most this many
  // bytes in all: past it the least recently written go (agent/kept_logs.h).
  int64_t kept_logs_bytes = int64_t{4} << 30;
  // Raw log bytes shipped per heartbeat, all jobs together (the controller takes HTTP bodies of
  // at most 1 MiB; a link without that limit may ship more).
  int64_t log_budget_bytes = 512 * 1024;
  // The container runtime's CLI for container jobs: "podman" (default), "docker", or a path.
  std::string container_runtime = "podman";
  // How often the node's container images are listed and reported (0: never).
  int64_t images_refresh_ms = 60000;
};

// The figures a heartbeat carries for per-job usage summaries, from the sampler's latest samples.
std::vector<net::GpuFigure> FiguresOf(const std::vector<gpu::GpuSample>& samples);

class NodeAgent {
 public:
  // How long a log whose chunk the controller held back (its user at the log quota) waits before
  // it is sent again.
  static constexpr std::chrono::seconds kLogHeldBackPause{10};
  // `link` carries the heartbeats. `samples_json` gives the GPU document sent with a heartbeat
  // at most once a second ("" for none); `figures` each GPU's latest utilization, memory and
  // health (may be empty).
  NodeAgent(NodeAgentOptions options, std::unique_ptr<net::ControllerLink> link,
            std::function<std::string()> samples_json,
            std::function<std::vector<net::GpuFigure>()> figures = {});
  ~NodeAgent();
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  // Loads the held jobs and re-adopts their processes; errors name the path.
  core::Result<bool> Recover();
  // One heartbeat: reap, report, apply the reply; true when the reply changed something here (a
  // launch or a stop) or logs wait to be shipped, so the caller reports again at once. An error
  // when the controller could not be reached or refused the heartbeat (jobs keep running either
  // way).
  core::Result<bool> Beat(int64_t now_ms);
  // Makes a Beat under way launch nothing more (what it has not launched stays unrecorded here,
  // so the controller's next agent launches it), for a prompt stop. Any thread may call it.
  void Interrupt() { interrupted_ = true; }
  // Blocks until a job here ends, `wake_fd` (an eventfd, or -1) is readable, or `timeout_ms`
  // has passed; drains `wake_fd`. For an agent that beats when there is news, not on a timer.
  void WaitForNews(int timeout_ms, int wake_fd = -1) const;
  std::size_t held() const { return held_.size(); }
  // What this node limits and measures jobs with (CgroupLimits::Kind), once recovered.
  std::string_view limits() const { return cgroups_.Kind(); }
  int64_t node_epoch() const { return node_epoch_; }

 private:
  struct Held {
    int64_t id = 0;
    int64_t epoch = 0;
    int rank = 0;
    int64_t pid = 0;
    uint64_t pid_start = 0;
    std::string boot_id;  // the machine's boot at launch (Launched::boot_id)
    std::string log_path;
    bool restartable = false;
    bool ended = false;
    bool lost = false;
    bool stopped = false;
    int exit_code = 0;
    std::string reason;
    bool stop_sent = false;  // recorded: a restarted agent reports its end as stopped
    double stop_grace_s = 0;
    int64_t log_acked = -1;  // -1: not known yet (the controller says in its next reply)
    // The controller held the last chunk back (its user is at the log quota): none is sent again
    // before this time.
    std::chrono::steady_clock::time_point log_resume{};
    // The controller's last word on the log was that it holds the rest back (it took nothing
    // since): when the job is forgotten, the node's copy goes too (not kept across restarts).
    bool log_cut = false;
    core::HostUsage usage;   // the latest sample; once ended, its final usage
    int64_t usage_ms = 0;    // when `usage` was sampled (running jobs: at most once a second)
    std::string container;   // a container job's container name ("" : a host job)
    // The store of the controller that placed it (HeartbeatReply::store_id; "" : not known).
    std::string store_id;
  };
  // Whether `h` came from another store than the controller's now (one made anew in its place,
  // numbering jobs from 1 again): not the job of the same id and epoch the controller knows. It
  // is neither reported nor matched to an assignment, and is fenced and forgotten.
  bool FromAnotherStore(const Held& h) const {
    return !h.store_id.empty() && !store_id_.empty() && h.store_id != store_id_;
  }
  std::string RecordPath(int64_t id) const;
  void Persist(const Held& h) const;
  void Forget(int64_t id);
  // Removes the oldest logs of jobs no longer held past options_.kept_logs_bytes.
  void KeepLogsWithinBudget();
  // The deadline restartable jobs' shims watch (see LaunchSpec::lease_path): half a lease after
  // the last heartbeat the controller answered.
  std::string LeasePath() const;
  void WriteLease(int64_t deadline_ms) const;
  void Launch(const net::Assignment& a);
  // Applies the controller's wish; true when it launched or stopped something.
  bool Apply(const net::HeartbeatReply& reply);
  net::Heartbeat Report(int64_t now_ms);

  NodeAgentOptions options_;
  std::unique_ptr<net::ControllerLink> link_;
  std::function<std::string()> samples_json_;
  std::function<std::vector<net::GpuFigure>()> figures_;
  Runner runner_;
  CgroupLimits cgroups_;
  JobUsageMeter meter_{cgroups_};
  std::map<int64_t, Held> held_;  // by job id: a job has at most one rank per node
  int64_t node_epoch_ = 0;
  // The controller's store, as its last reply said ("" : not known), kept in the data directory's
  // `store-id` across restarts.
  std::string store_id_;
  int64_t lease_ms_ = 0;
  int64_t last_ok_ms_ = 0;  // when the last successful heartbeat was sent
  bool outage_reported_ = false;
  bool self_fenced_ = false;
  int64_t samples_sent_ms_ = 0;  // when the GPU document was last sent
  // The container images, listed by a thread of their own every images_refresh_ms (a runtime's
  // CLI takes 0.1-0.3 s to answer: never on the heartbeat's path); Report sends a new list once.
  void ListImagesEvery(int64_t period_ms);
  std::mutex images_mutex_;
  std::condition_variable images_wake_;
  bool images_stop_ = false;
  std::optional<std::vector<std::string>> images_fresh_;  // listed, not yet reported
  std::thread images_thread_;
  int64_t host_cpu_milli_ = 0, host_memory_mib_ = 0;  // reported with each beat (0: unknown)
  // Each GPU's devices-cgroup rule by index (DeviceRule; "" : not a device here), set by Recover.
  std::vector<std::string> gpu_device_rules_;
  // The rules of the node's GPUs that a job on `gpu_indices` was not given.
  std::vector<std::string> DeniedDevices(const std::vector<int>& gpu_indices) const;
  int64_t lease_written_ms_ = 0;  // the deadline last written to the lease file
  bool logs_pending_ = false;    // the last report left log bytes unshipped
  std::atomic<bool> interrupted_{false};
};

}  // namespace gpufleet::agent

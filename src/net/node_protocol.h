#pragma once
// The agent <-> controller heartbeat, both directions, and its JSON form.
//
// Level-triggered: every heartbeat carries the agent's whole view (its GPUs, every job it holds,
// how far it has shipped each log), and every reply carries the controller's whole wish for that
// node (every assignment it should run, or stop). Either side may crash and resend; applying the
// same message twice changes nothing.
//
// Fencing: each placement of a job has an `epoch` (the job's, bumped at every placement). An
// agent stops any process whose (job, epoch) the reply does not list, so work from before a node
// was declared lost, or from an older placement, never runs beside its successor. `started`
// tells an agent that a rank already ran: an agent that does not know it (its state was lost)
// reports it lost rather than starting it a second time.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/container.h"
#include "core/gpu_links.h"
#include "core/host_usage.h"
#include "core/result.h"

namespace gpufleet::net {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// One node's part ("rank") of a job, as the agent last saw it.
struct ReportedJob {
  int64_t id = 0;
  int64_t epoch = 0;
  int rank = 0;
  enum class State { kRunning, kExited, kLost } state = State::kRunning;
  int exit_code = 0;
  bool stopped = false;  // ended after a stop request
  int64_t pid = 0;
  uint64_t pid_start = 0;
  std::string reason;     // for kLost, or a launch failure
  int64_t log_size = 0;   // bytes in the agent's log of this rank
  int64_t log_from = -1;  // offset of `log_data` (-1: none sent)
  std::string log_data;   // raw bytes (base64 on the wire)
  core::HostUsage usage;  // what it has used of the host so far (final once exited)
};

// One GPU's latest figures, for per-job usage summaries (allocated vs really used GPU time).
struct GpuFigure {
  int index = 0;
  int64_t sample_ms =
      0;  // when the agent read it (wall clock); a repeated sample is not counted twice
  double util_pct = -1;  // -1: unknown
  int64_t mem_used_mib = -1;
  // For the advisor (advise/usage_series.h); each -1 when not read.
  double membw_pct = -1;       // memory-bandwidth utilization
  int64_t mem_total_mib = -1;
  double pcie_mb_s = -1;       // rx + tx
  double power_w = -1, power_limit_w = -1;
  int64_t sm_clock_mhz = -1;
  int64_t clock_reasons = -1;  // nvmlClocksEventReason* bits
  // SM % of each gpufleet job's own processes on this GPU (from NVML's per-process utilization):
  // what a job used of a shared GPU. On the wire "jobs": [[id, sm], ...]; at most
  // kMaxJobsPerFigure (a full list may have left some job out).
  static constexpr std::size_t kMaxJobsPerFigure = 64;
  std::vector<std::pair<int64_t, double>> job_sm;
  // The agent's health verdict (gpu/health.h): an unhealthy GPU is drained by the controller.
  bool healthy = true;
  std::string health_reason;  // why not, when unhealthy ("XID 79 (...)"; reasons joined by "; ")
};

struct Heartbeat {
  std::string node;
  std::string address;     // where other nodes reach this one (MASTER_ADDR)
  int64_t node_epoch = 0;  // as the last reply gave it; 0 at first contact
  int gpus = 0;
  std::string gpu_model;
  // What jobs may ask of the node's host, for placement: milli-CPUs and MiB of memory (each 0:
  // unknown, then jobs' CPU and memory requests are not counted against the node).
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  bool simulated = false;
  // What the node enforces job limits and measures jobs with: "cgroup-v2", "cgroup-v2-memory"
  // (memory limits only), "cgroup-v1" or "none" (agent/cgroup_limits.h), and why not cgroups
  // when "none" (why no CPU limits, with "cgroup-v2-memory").
  std::string limits = "none";
  std::string limits_why;
  std::string samples_json;  // the agent's GPU document (as on its /v1/gpus), or ""
  // How the node's GPUs are connected (NVLink counts and PCIe classes per pair, see
  // core/gpu_links.h); empty when the agent did not read it. On the wire:
  // "gpu_links": {"nvlinks": [[...]], "pcie": [[...]]}, both `gpus` x `gpus`, symmetric, in range.
  // The controller hands it to `ClusterSnapshot::SetGpuLinks`.
  core::GpuLinks gpu_links;
  // Long poll: the controller may hold the reply this long (capped at a quarter of the lease)
  // until it has new work for this node, so work reaches an agent at once, not a beat later.
  int64_t wait_ms = 0;
  std::vector<GpuFigure> figures;
  std::vector<ReportedJob> jobs;
  // The container images the node holds ("repository:tag"), sent now and then (about once a
  // minute); absent: unchanged since the last. At most kMaxNodeImages, each a valid reference.
  std::optional<std::vector<std::string>> images;
};

inline constexpr std::size_t kMaxNodeImages = 512;

struct Assignment {
  int64_t id = 0;
  int64_t epoch = 0;
  int rank = 0;
  std::string user;
  std::vector<std::string> argv;
  EnvList env;         // the job's own
  EnvList launch_env;  // gpufleet's for this rank (multi-node: MASTER_ADDR, RANK, ...)
  std::string workdir;
  std::vector<int> gpu_indices;
  bool restartable = false;
  int64_t cpu_milli = 0;   // CPU limit (0: none)
  int64_t memory_mib = 0;  // memory limit (0: none)
  core::ContainerSpec container;  // empty: a host process
  core::PullPolicy pull = core::PullPolicy::kNever;  // for a container's image
  bool started = false;    // this rank ran before: never start it again
  bool stop = false;       // stop it (cancel, or another rank failed)
  double grace_s = 10;
};

struct LogAck {
  int64_t id = 0;
  int rank = 0;
  int64_t size = 0;  // bytes the controller holds: the next chunk starts here
  // The chunk sent was not taken: its user's running jobs are at their log quota. The agent waits
  // a while (NodeAgent::kLogHeldBackPause) before it sends that log again.
  bool held_back = false;
};

struct HeartbeatReply {
  int64_t node_epoch = 0;
  // The controller's store (store::Store::StoreId; "" from a controller before it, and in place
  // of one that is not lowercase hex of at most 64 digits): a job this node recorded under another
  // store is not the same job as one of this store with its id and epoch (a store made anew
  // numbers jobs from 1 again).
  std::string store_id;
  int64_t lease_ms = 0;  // the controller declares the node lost after this much silence
  std::vector<Assignment> assignments;
  std::vector<LogAck> logs;
};

std::string ToJson(const Heartbeat& beat);
std::string ToJson(const HeartbeatReply& reply);
// Errors name the bad field.
core::Result<Heartbeat> ParseHeartbeat(const std::string& body);
// Whether `name` may name a node: 1-64 bytes, no comma, slash, space, control or bidirectional
// formatting character (names are shown in tables and logs, and end up in URL paths).
bool IsNodeName(std::string_view name);
core::Result<HeartbeatReply> ParseHeartbeatReply(const std::string& body);

std::string Base64Encode(const std::string& bytes);
core::Result<std::string> Base64Decode(const std::string& text);

}  // namespace gpufleet::net

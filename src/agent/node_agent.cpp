#include "agent/node_agent.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

#include "agent/kept_logs.h"
#include "core/text.h"
#include "net/host_usage_json.h"
#include "net/private_file.h"

namespace gpufleet::agent {
namespace {

using nlohmann::json;
// The most bytes of a job's reason a heartbeat carries (the protocol refuses more than 64 KiB).
constexpr std::size_t kMaxReportedReason = 4096;
// Assignments launched per beat at most; the rest go at the next beat, which follows at once.
constexpr int kLaunchesPerBeat = 16;

int64_t FileSize(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(size);
}

std::string ReadRange(const std::string& path, int64_t from, int64_t count) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(from);
  std::string out(static_cast<std::size_t>(count), '\0');
  in.read(out.data(), count);
  out.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
  return out;
}

}  // namespace

std::vector<net::GpuFigure> FiguresOf(const std::vector<gpu::GpuSample>& samples) {
  std::vector<net::GpuFigure> out;
  for (const gpu::GpuSample& s : samples) {
    net::GpuFigure f;
    f.index = s.index;
    f.sample_ms = s.unix_ms;
    if (s.gpu_util_pct.has_value()) f.util_pct = s.gpu_util_pct.value;
    if (s.fb_used_bytes.has_value()) {
      f.mem_used_mib = static_cast<int64_t>(s.fb_used_bytes.value >> 20);
    }
    if (s.mem_util_pct.has_value()) f.membw_pct = s.mem_util_pct.value;
    if (s.fb_total_bytes.has_value()) {
      f.mem_total_mib = static_cast<int64_t>(s.fb_total_bytes.value >> 20);
    }
    if (s.pcie_rx_kbps.has_value() || s.pcie_tx_kbps.has_value()) {
      const double kbps = (s.pcie_rx_kbps.has_value() ? s.pcie_rx_kbps.value : 0.0) +
                          (s.pcie_tx_kbps.has_value() ? s.pcie_tx_kbps.value : 0.0);
      f.pcie_mb_s = kbps * 1024.0 / 1e6;  // NVML's PCIe figures are KB/s (1024 bytes)
    }
    if (s.power_mw.has_value()) f.power_w = s.power_mw.value / 1000.0;
    if (s.power_limit_mw.has_value()) f.power_limit_w = s.power_limit_mw.value / 1000.0;
    if (s.sm_clock_mhz.has_value()) f.sm_clock_mhz = s.sm_clock_mhz.value;
    if (s.clock_event_reasons.has_value()) {
      f.clock_reasons = static_cast<int64_t>(s.clock_event_reasons.value & ((uint64_t{1} << 40) - 1));
    }
    if (s.processes.has_value()) {
      for (const gpu::GpuProcess& p : s.processes.value) {
        if (p.job_id.empty() || !p.sm_util_pct.has_value()) continue;
        char* end = nullptr;
        const long long id = std::strtoll(p.job_id.c_str(), &end, 10);
        if (id <= 0 || *end != '\0') continue;
        auto it = std::find_if(f.job_sm.begin(), f.job_sm.end(),
                               [&](const auto& e) { return e.first == id; });
        if (it == f.job_sm.end()) {
          if (f.job_sm.size() >= net::GpuFigure::kMaxJobsPerFigure) continue;
          f.job_sm.emplace_back(id, 0.0);
          it = f.job_sm.end() - 1;
        }
        it->second = std::min(100.0, it->second + p.sm_util_pct.value);
      }
    }
    f.healthy = s.health.healthy;
    for (const std::string& why : s.health.reasons) {
      f.health_reason += (f.health_reason.empty() ? "" : "; ") + why;
    }
    out.push_back(f);
  }
  return out;
}

NodeAgent::NodeAgent(NodeAgentOptions options, std::unique_ptr<net::ControllerLink> link,
                     std::function<std::string()> samples_json,
                     std::function<std::vector<net::GpuFigure>()> figures)
    : options_(std::move(options)),
      link_(std::move(link)),
      samples_json_(std::move(samples_json)),
      figures_(std::move(figures)),
      runner_([this] {
        RunAsPolicy policy = options_.run_as;
        policy.node_name = options_.node_name;
        return policy;
      }()) {
  // What jobs may ask of this host (placement counts --cpus and --memory against it; the advisor
  // measures jobs without limits against it): the CPUs this process may run on, and its memory.
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) host_cpu_milli_ = CPU_COUNT(&cpus) * 1000;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) host_memory_mib_ = static_cast<int64_t>(pages) * page >> 20;
  runner_.set_container_host(DetectContainerHost(options_.container_runtime, options_.simulated));
  if (options_.images_refresh_ms > 0) {
    images_thread_ = std::thread([this] { ListImagesEvery(options_.images_refresh_ms); });
  }
}

void NodeAgent::ListImagesEvery(int64_t period_ms) {
  const ContainerHost host = runner_.container_host();
  std::unique_lock<std::mutex> lock(images_mutex_);
  while (!images_stop_) {
    lock.unlock();
    auto images = ListImages(host);  // none: no runtime here, nothing to report
    lock.lock();
    if (images) images_fresh_ = std::move(images);
    images_wake_.wait_for(lock, std::chrono::milliseconds(period_ms),
                          [this] { return images_stop_; });
  }
}

// Jobs keep running: a restarted agent re-adopts them (and their cgroups).
NodeAgent::~NodeAgent() {
  {
    std::lock_guard<std::mutex> lock(images_mutex_);
    images_stop_ = true;
  }
  images_wake_.notify_all();
  if (images_thread_.joinable()) images_thread_.join();
  cgroups_.RemoveJobsCgroupIfEmpty();
}

std::string NodeAgent::RecordPath(int64_t id) const {
  return (std::filesystem::path(options_.data_dir) / "assignments" / (std::to_string(id) + ".json"))
      .string();
}

void NodeAgent::Persist(const Held& h) const {
  const json j = {{"id", h.id},
                  {"epoch", h.epoch},
                  {"rank", h.rank},
                  {"pid", h.pid},
                  {"pid_start", h.pid_start},
                  {"boot_id", h.boot_id},
                  {"log_path", h.log_path},
                  {"restartable", h.restartable},
                  {"ended", h.ended},
                  {"lost", h.lost},
                  {"stopped", h.stopped},
                  {"exit_code", h.exit_code},
                  {"reason", h.reason},
                  {"stop_sent", h.stop_sent},
                  {"stop_grace_s", h.stop_grace_s},
                  {"container", h.container},
                  {"store_id", h.store_id},
                  {"usage", net::HostUsageJson(h.usage)}};
  const std::string path = RecordPath(h.id);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(-1, ' ', false, json::error_handler_t::replace);
    out.flush();
    if (!out) {
      std::fprintf(stderr, "gpufleet agent: cannot write %s; job %lld is not recorded\n",
                   tmp.c_str(), static_cast<long long>(h.id));
      return;
    }
  }
  std::rename(tmp.c_str(), path.c_str());
}

std::string NodeAgent::LeasePath() const {
  return (std::filesystem::path(options_.data_dir) / "lease").string();
}

void NodeAgent::WriteLease(int64_t deadline_ms) const {
  const std::string path = LeasePath();
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << deadline_ms << "\n";
    out.flush();
    if (!out) {
      // An empty or cut lease in its place would read as no deadline: the one there stays, and
      // its jobs fence themselves when it passes, as they would with the agent gone.
      std::fprintf(stderr, "gpufleet agent: cannot write %s; the lease there is not extended\n",
                   tmp.c_str());
      return;
    }
  }
  std::rename(tmp.c_str(), path.c_str());
}

void NodeAgent::KeepLogsWithinBudget() {
  std::set<int64_t> held;
  for (const auto& [id, h] : held_) held.insert(id);
  const int removed = TrimKeptLogs((std::filesystem::path(options_.data_dir) / "logs").string(),
                                   held, options_.kept_logs_bytes);
  if (removed > 0) {
    std::fprintf(stderr,
                 "gpufleet agent: removed the %d oldest logs of ended jobs that the controller did "
                 "not take whole (over %lld MiB kept)\n",
                 removed, static_cast<long long>(options_.kept_logs_bytes >> 20));
  }
}

void NodeAgent::Forget(int64_t id) {
  std::error_code ec;
  std::filesystem::remove(RecordPath(id), ec);
  auto it = held_.find(id);
  const pid_t pgid = it == held_.end() ? 0 : static_cast<pid_t>(it->second.pid);
  const uint64_t pgid_start = it == held_.end() ? 0 : it->second.pid_start;
  if (it != held_.end()) {
    // The controller keeps its copy of the log: the node's goes with the job, or every job ever
    // run would stay on the node's disk (a user's many chatty jobs could fill it). A log the
    // controller did not take whole (it stopped waiting for the rest) stays, for an admin.
    const Held& h = it->second;
    std::error_code size_ec;
    const uintmax_t size = h.log_path.empty() ? 0 : std::filesystem::file_size(h.log_path, size_ec);
    const bool gone = size_ec == std::errc::no_such_file_or_directory;
    // (A job this agent never launched has no log path: nothing of it to delete.)
    // A log the controller cut at its user's quota goes too: keeping the rest would move the
    // quota's bytes onto the node's disk, for good.
    if (!h.log_path.empty() &&
        (gone || h.log_cut ||
         (!size_ec && h.log_acked >= 0 && static_cast<uintmax_t>(h.log_acked) >= size))) {
      for (const std::string& path :
           {h.log_path, ExitFilePath(h.log_path), FencedFilePath(h.log_path),
            ContainerIdFilePath(h.log_path)}) {
        std::filesystem::remove(path, ec);
      }
    } else if (!h.log_path.empty()) {
      held_.erase(it);
      KeepLogsWithinBudget();  // of this one and the others kept
    }
  }
  held_.erase(id);
  meter_.Forget(id);
  cgroups_.Release(id, pgid, pgid_start);
}

core::Result<bool> NodeAgent::Recover() {
  // A root agent whose shim others could replace would fail every job it is given while it looks
  // healthy: it does not start.
  if (auto unsafe = UnsafeForRoot(runner_.shim_path())) return core::Error{*unsafe};
  cgroups_ =
      CgroupLimits::Detect(options_.cgroup_root, CgroupLimits::InstanceTag(options_.data_dir));
  cgroups_.TidyOtherPaths();  // what an older agent left at other paths
  gpu_device_rules_.clear();
  std::string missing;  // GPUs whose device node is not here
  for (std::size_t i = 0; i < options_.gpu_device_nodes.size(); ++i) {
    const std::string& node = options_.gpu_device_nodes[i];
    gpu_device_rules_.push_back(node.empty() ? "" : DeviceRule(node));
    if (gpu_device_rules_.back().empty()) {
      missing += (missing.empty() ? "" : ", ") + std::to_string(i) +
                 (node.empty() ? std::string(" (the driver named none)") : " (" + node + ")");
    }
  }
  if (!options_.gpu_device_nodes.empty()) {
    if (!cgroups_.ConfinesDevices()) {
      std::fprintf(stderr,
                   "gpufleet agent: jobs are not kept off GPUs they were not given (they get "
                   "CUDA_VISIBLE_DEVICES only): that takes the cgroup v1 devices hierarchy, or on "
                   "v2 a BPF device program, which takes root; this node has %s%s%s\n",
                   std::string(cgroups_.Kind()).c_str(),
                   cgroups_.devices_unconfined_why().empty() ? "" : ": ",
                   cgroups_.devices_unconfined_why().c_str());
    } else if (!missing.empty()) {
      std::fprintf(stderr, "gpufleet agent: no device node for GPU %s: jobs are not kept off it\n",
                   missing.c_str());
    }
  }
  if (geteuid() == 0 && !options_.run_as.shared_dev_shm && !PrivateShmUnavailable().empty()) {
    std::fprintf(stderr,
                 "gpufleet agent: jobs share the node's /dev/shm and System V IPC (what one leaves "
                 "there stays, and others see it): %s\n",
                 PrivateShmUnavailable().c_str());
  }
  const std::filesystem::path dir = std::filesystem::path(options_.data_dir) / "assignments";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::filesystem::create_directories(std::filesystem::path(options_.data_dir) / "logs", ec);
  if (ec) return core::Error{"cannot create " + dir.string() + ": " + ec.message()};
  {
    std::ifstream in(std::filesystem::path(options_.data_dir) / "store-id");
    std::string id;
    if (in >> id && id.size() <= 64 &&
        id.find_first_not_of("0123456789abcdef") == std::string::npos) {
      store_id_ = id;
    }
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    json j = json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("id")) {
      std::fprintf(stderr, "gpufleet agent: ignoring unreadable record %s\n", entry.path().c_str());
      continue;
    }
    Held h;
    h.id = j.value("id", int64_t{0});
    h.epoch = j.value("epoch", int64_t{0});
    h.rank = j.value("rank", 0);
    h.pid = j.value("pid", int64_t{0});
    h.pid_start = j.value("pid_start", uint64_t{0});
    h.boot_id = j.value("boot_id", std::string());
    h.log_path = j.value("log_path", std::string());
    h.restartable = j.value("restartable", false);
    h.ended = j.value("ended", false);
    h.lost = j.value("lost", false);
    h.stopped = j.value("stopped", false);
    h.exit_code = j.value("exit_code", 0);
    h.reason = j.value("reason", std::string());
    h.stop_sent = j.value("stop_sent", false);
    h.stop_grace_s = j.value("stop_grace_s", 0.0);
    h.container = j.value("container", std::string());
    h.store_id = j.value("store_id", std::string());
    try {
      if (j.contains("usage")) h.usage = net::ParseHostUsageJson(j.at("usage"), "usage");
    } catch (const std::exception&) {
      // The record is this agent's own; a damaged usage only leaves the job unmeasured.
    }
    if (!h.ended) {
      if (h.pid <= 0) {
        h.ended = h.lost = true;
        h.reason = "the agent stopped while launching it; not started again";
        // Its container may have been made before the agent died: nothing may run unaccounted.
        if (!h.container.empty()) {
          RemoveContainerNow(h.container, ContainerIdFilePath(h.log_path),
                             runner_.container_host());
        }
      } else if (!runner_.Adopt(h.id, Launched{static_cast<pid_t>(h.pid), h.pid_start, h.boot_id},
                                h.log_path, h.container)) {
        h.ended = h.lost = true;
        h.reason = "its process ended while the agent was down and left no exit record";
        // Its shim is gone, but its container may not be: nothing may run unaccounted.
        if (!h.container.empty()) {
          RemoveContainerNow(h.container, ContainerIdFilePath(h.log_path),
                             runner_.container_host());
        }
      }
      if (h.ended) Persist(h);
    }
    // Being stopped when the agent went down: its SIGKILL timer went with it; arm it again.
    if (!h.ended && h.stop_sent) runner_.Stop(h.id, h.stop_grace_s);
    held_[h.id] = std::move(h);
  }
  // Job cgroups this agent holds no record of (their job was settled, then the agent stopped
  // before it removed them): kill what is left in them and remove them.
  for (int64_t id : cgroups_.JobIds()) {
    if (held_.count(id) == 0) cgroups_.Release(id, 0);
  }
  KeepLogsWithinBudget();  // what an agent before this one kept
  return true;
}

void NodeAgent::Launch(const net::Assignment& a) {
  Held h;
  h.id = a.id;
  h.epoch = a.epoch;
  h.rank = a.rank;
  h.restartable = a.restartable;
  h.store_id = store_id_;
  h.log_path = (std::filesystem::path(options_.data_dir) / "logs" /
                (std::to_string(a.id) + "-" + std::to_string(a.epoch) + ".log"))
                   .string();
  if (!a.container.empty()) h.container = ContainerName(a.id, a.epoch, a.rank);
  // A run is launched here once (below), so a log of the same job and epoch is an earlier job's,
  // kept when the controller's store was made anew and numbered jobs from 1 again: the new job
  // would append to it, be given it (its owner), and ship it as its own; its exit record would
  // pass for the new run's.
  for (const std::string& path : {h.log_path, ExitFilePath(h.log_path), FencedFilePath(h.log_path),
                                  ContainerIdFilePath(h.log_path)}) {
    std::error_code ec;
    if (std::filesystem::remove(path, ec)) {
      std::fprintf(stderr,
                   "gpufleet agent: job %lld: removed %s, left by an earlier job of the same id "
                   "and epoch (was the controller's store made anew?)\n",
                   static_cast<long long>(a.id), path.c_str());
    }
  }
  Persist(h);  // before the launch: a crash from here on reports it lost, never starts it twice
  LaunchSpec spec;
  spec.job_id = a.id;
  spec.argv = a.argv;
  spec.env = a.env;
  spec.launch_env = a.launch_env;
  spec.node_address = options_.address;
  spec.workdir = a.workdir;
  spec.gpu_indices = a.gpu_indices;
  for (int g : a.gpu_indices) {
    const bool known = g >= 0 && static_cast<std::size_t>(g) < options_.gpu_device_nodes.size();
    spec.gpu_device_nodes.push_back(known ? options_.gpu_device_nodes[g] : "");
  }
  spec.user = a.user;
  spec.log_path = h.log_path;
  spec.log_limit_bytes = options_.log_limit_bytes;
  spec.memory_mib = a.memory_mib;  // sizes its /dev/shm
  // A container job gets its own GPUs' devices from the runtime, and no others; a process job
  // is denied the rest in its devices cgroup.
  const std::vector<std::string> denied = a.container.empty() && cgroups_.ConfinesDevices()
                                              ? DeniedDevices(a.gpu_indices)
                                              : std::vector<std::string>{};
  spec.cgroup_procs =
      cgroups_.ForLaunch(a.id, JobLimits{a.cpu_milli, a.memory_mib}, "gpufleet agent",
                         /*runtime_leaf=*/!a.container.empty(), denied);
  if (!denied.empty() && spec.cgroup_procs.empty()) {
    // Without its cgroup it would reach every GPU of the node: not started.
    h.ended = true;
    h.exit_code = 127;
    h.reason =
        "its cgroup could not be prepared, so it could not be kept off the node's other "
        "GPUs (the agent's log says why)";
    Persist(h);
    held_[a.id] = std::move(h);
    return;
  }
  if (!a.container.empty()) {
    spec.container = a.container;
    spec.pull = a.pull;
    spec.container_name = h.container;
    // Where the node cannot limit CPU (a v2 hierarchy without the cpu controller), the runtime
    // could not either, and would refuse to start the container for it.
    spec.cpu_milli = cgroups_.available() && !cgroups_.CpuLimited() ? 0 : a.cpu_milli;
    if (!spec.cgroup_procs.empty()) {
      spec.container_cgroup_parent = cgroups_.ContainerParent(a.id);
      spec.oom_watch_dir = cgroups_.OomWatchDir(a.id);
    }
  }
  if (a.restartable) {
    spec.lease_path = LeasePath();
    spec.lease_grace_s = std::min(options_.fence_grace_s, lease_ms_ / 4000.0);
  }
  auto launched = runner_.Launch(spec);
  if (launched) {
    h.pid = launched.value().pid;
    h.pid_start = launched.value().start_ticks;
    h.boot_id = launched.value().boot_id;
  } else {
    h.ended = true;
    h.exit_code = 127;
    h.reason = launched.error();
  }
  Persist(h);
  held_[a.id] = std::move(h);
}

std::vector<std::string> NodeAgent::DeniedDevices(const std::vector<int>& gpu_indices) const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < gpu_device_rules_.size(); ++i) {
    const bool given =
        std::find(gpu_indices.begin(), gpu_indices.end(), static_cast<int>(i)) != gpu_indices.end();
    if (!given && !gpu_device_rules_[i].empty()) out.push_back(gpu_device_rules_[i]);
  }
  return out;
}

net::Heartbeat NodeAgent::Report(int64_t now_ms) {
  net::Heartbeat beat;
  beat.node = options_.node_name;
  beat.address = options_.address;
  beat.node_epoch = node_epoch_;
  beat.gpus = options_.gpus;
  beat.gpu_model = options_.gpu_model;
  beat.cpu_milli = host_cpu_milli_;
  beat.memory_mib = host_memory_mib_;
  beat.simulated = options_.simulated;
  beat.gpu_links = options_.gpu_links;
  beat.limits = std::string(cgroups_.Kind());
  beat.limits_why = cgroups_.why_unavailable();
  // The GPU document changes once a second (the sampler's period); the controller keeps the last.
  if (samples_json_ && (now_ms - samples_sent_ms_ >= 1000 || now_ms < samples_sent_ms_)) {
    beat.samples_json = samples_json_();
    samples_sent_ms_ = now_ms;
  }
  if (figures_) beat.figures = figures_();
  {
    std::lock_guard<std::mutex> lock(images_mutex_);
    if (images_fresh_) beat.images = std::move(images_fresh_);
    images_fresh_.reset();
  }
  int64_t budget = options_.log_budget_bytes;
  logs_pending_ = false;
  for (auto& [id, h] : held_) {
    // The controller would take it for its own job of that id and epoch.
    if (FromAnotherStore(h)) continue;
    net::ReportedJob r;
    r.id = h.id;
    r.epoch = h.epoch;
    r.rank = h.rank;
    r.state = h.lost    ? net::ReportedJob::State::kLost
              : h.ended ? net::ReportedJob::State::kExited
                        : net::ReportedJob::State::kRunning;
    r.exit_code = h.exit_code;
    r.stopped = h.stopped;
    r.pid = h.pid;
    r.pid_start = h.pid_start;
    // Bounded, whatever a launch failure quoted: the controller refuses a heartbeat whose text
    // is too long, and the node would lose its lease over one job's message.
    r.reason = core::TruncateUtf8(h.reason, kMaxReportedReason);
    // A running job's cgroup is read at most once a second, however often the node beats.
    if (!h.ended && h.usage_ms == 0) {
      h.usage_ms = now_ms;  // first read a second after it started (a short job: at its end)
    } else if (!h.ended && (now_ms - h.usage_ms >= 1000 || now_ms < h.usage_ms)) {
      h.usage = meter_.Sample(h.id, static_cast<pid_t>(h.pid));
      h.usage_ms = now_ms;
    }
    r.usage = h.usage;
    r.log_size = h.log_path.empty() ? 0 : FileSize(h.log_path);
    if (h.log_acked >= 0 && r.log_size > h.log_acked && budget > 0 &&
        std::chrono::steady_clock::now() >= h.log_resume) {
      r.log_from = h.log_acked;
      r.log_data = ReadRange(h.log_path, h.log_acked, std::min(budget, r.log_size - h.log_acked));
      budget -= static_cast<int64_t>(r.log_data.size());
    }
    if (h.log_acked >= 0 && r.log_size > h.log_acked + static_cast<int64_t>(r.log_data.size())) {
      logs_pending_ = true;
    }
    beat.jobs.push_back(std::move(r));
  }
  return beat;
}

bool NodeAgent::Apply(const net::HeartbeatReply& reply) {
  bool changed = false;
  if (node_epoch_ != 0 && reply.node_epoch != node_epoch_) {
    std::fprintf(stderr,
                 "gpufleet agent: the controller declared this node lost while it was silent; "
                 "stopping the jobs it no longer lists\n");
  }
  node_epoch_ = reply.node_epoch;  // lease_ms_: set by Beat, before the lease file is written
  if (!reply.store_id.empty() && reply.store_id != store_id_) {
    store_id_ = reply.store_id;
    // Kept across restarts: a restarted agent's first beat must leave out another store's jobs
    // too (the controller would take one for its own job of that id and epoch).
    const auto kept = net::WritePrivateFile(
        (std::filesystem::path(options_.data_dir) / "store-id").string(), store_id_ + "\n");
    if (!kept) std::fprintf(stderr, "gpufleet agent: %s\n", kept.error().c_str());
    for (const auto& [id, h] : held_) {
      if (FromAnotherStore(h)) {
        std::fprintf(stderr,
                     "gpufleet agent: job %lld (epoch %lld) came from another store than the "
                     "controller's (was its store made anew?): fencing it, and running the "
                     "controller's job of that id, if any, once it has ended\n",
                     static_cast<long long>(id), static_cast<long long>(h.epoch));
      }
    }
  }
  std::set<std::pair<int64_t, int64_t>> listed;  // (id, epoch)
  int launched = 0;
  // Launches in one beat stop after a quarter of a lease (the rest go at the next beat, at
  // once): a launch may wait up to Runner::kExecWaitMs for a job's exec, which the job's user
  // can stall, and the beats that renew the lease must go on.
  const auto launches_start = std::chrono::steady_clock::now();
  const auto launch_budget = std::chrono::milliseconds(std::max<int64_t>(lease_ms_ / 4, 1));
  for (const net::Assignment& a : reply.assignments) {
    listed.emplace(a.id, a.epoch);
    auto it = held_.find(a.id);
    if (it != held_.end() && it->second.epoch == a.epoch && !FromAnotherStore(it->second)) {
      Held& h = it->second;
      if (a.stop && !h.ended && !h.stop_sent) {
        runner_.Stop(h.id, a.grace_s);
        h.stop_sent = true;
        h.stop_grace_s = a.grace_s;
        Persist(h);  // so that its end is reported as stopped after an agent restart too
        changed = true;
      }
      continue;
    }
    // An older placement still here, or another store's job of this id: fenced below first.
    if (it != held_.end()) continue;
    Held h;
    h.id = a.id;
    h.epoch = a.epoch;
    h.rank = a.rank;
    h.store_id = store_id_;
    if (a.started) {
      // The controller saw it run here, but this agent has no record of it: report it lost.
      h.ended = h.lost = true;
      h.reason = "this agent has no record of it (its data directory was lost)";
    } else if (a.stop) {
      h.ended = h.stopped = true;
      h.reason = "stopped before it started";
    } else {
      // Stopping: launch nothing more. A storm: the next beat (at once) launches the rest, after
      // this one's starts are reported, so the store hears of starts as they happen.
      if (interrupted_.load() || launched >= kLaunchesPerBeat ||
          (launched > 0 && std::chrono::steady_clock::now() - launches_start >= launch_budget)) {
        changed = true;
        continue;
      }
      Launch(a);
      ++launched;
      changed = true;
      continue;
    }
    Persist(h);
    held_[a.id] = std::move(h);
  }
  bool log_progress = false;
  for (const net::LogAck& ack : reply.logs) {
    auto it = held_.find(ack.id);
    // Listed at the epoch held here, or not listed at all: the last ack of a job that the
    // controller settled with this reply (an ack while another epoch is listed is not this run's).
    const auto l = listed.lower_bound({ack.id, std::numeric_limits<int64_t>::min()});
    const bool listed_other = it != held_.end() && l != listed.end() && l->first == ack.id &&
                              l->second != it->second.epoch;
    if (it != held_.end() && !listed_other && !FromAnotherStore(it->second)) {
      const bool took_more = ack.size > it->second.log_acked;
      log_progress |= took_more;
      it->second.log_acked = ack.size;
      if (ack.held_back) {
        it->second.log_resume = std::chrono::steady_clock::now() + kLogHeldBackPause;
        it->second.log_cut = true;
      } else if (took_more) {
        it->second.log_cut = false;  // the controller takes it again
      }
    }
  }
  // Logs left unshipped go at once while the controller takes them (not when it cannot write).
  if (logs_pending_ && log_progress) changed = true;
  std::vector<int64_t> forget;
  for (auto& [id, h] : held_) {
    if (listed.count({id, h.epoch}) && !FromAnotherStore(h)) continue;
    if (!h.ended) {
      if (!h.stop_sent) {
        std::fprintf(stderr,
                     "gpufleet agent: fencing job %lld (epoch %lld): not listed by the "
                     "controller any more\n",
                     static_cast<long long>(id), static_cast<long long>(h.epoch));
        runner_.Stop(id, options_.fence_grace_s);
        h.stop_sent = true;
        h.stop_grace_s = options_.fence_grace_s;
        Persist(h);
        changed = true;
      }
      continue;
    }
    forget.push_back(id);  // ended and settled by the controller
  }
  for (int64_t id : forget) Forget(id);
  return changed;
}

void NodeAgent::WaitForNews(int timeout_ms, int wake_fd) const {
  std::vector<pollfd> fds;
  if (wake_fd >= 0) fds.push_back({wake_fd, POLLIN, 0});
  for (int fd : runner_.ExitFds()) fds.push_back({fd, POLLIN, 0});
  if (::poll(fds.data(), fds.size(), timeout_ms) > 0 && wake_fd >= 0 &&
      (fds[0].revents & POLLIN)) {
    uint64_t count = 0;
    [[maybe_unused]] const ssize_t n = ::read(wake_fd, &count, sizeof count);
  }
}

core::Result<bool> NodeAgent::Beat(int64_t now_ms) {
  for (const JobExit& e : runner_.Reap()) {
    auto it = held_.find(e.job_id);
    if (it == held_.end()) continue;
    Held& h = it->second;
    h.ended = true;
    h.exit_code = e.exit_code;
    h.stopped = e.stopped || h.stop_sent;
    if (e.signal != 0) h.reason = "killed by signal " + std::to_string(e.signal);
    // Before its cgroup goes; its shim has been reaped, so nothing below its pid is the job's.
    h.usage = meter_.Sample(h.id, static_cast<pid_t>(h.pid), false);
    if (e.oom_events > 0 && e.signal == SIGKILL) {
      // Its cgroup hit the memory limit and the kernel killed in it; the victim's own cgroup (a
      // container's) may be gone by now, with the count the figures would have shown.
      h.usage.set(core::UsageFigure::kOomKills,
                  std::max<int64_t>(1, h.usage.get(core::UsageFigure::kOomKills)));
    }
    cgroups_.Release(h.id, static_cast<pid_t>(h.pid), h.pid_start);  // what it left goes too
    std::error_code ec;
    if (std::filesystem::exists(FencedFilePath(h.log_path), ec)) {
      // Its shim stopped it when the lease ran out: the controller requeues it.
      h.lost = true;
      h.reason = "stopped on its node when the controller's lease ran out";
    }
    Persist(it->second);
  }
  if (lease_ms_ > 0 && last_ok_ms_ > 0 && now_ms - last_ok_ms_ > lease_ms_ / 2 && !self_fenced_) {
    // The shims of restartable jobs stop them now (see WriteLease): the controller will requeue
    // them once the lease runs out.
    const bool any = std::any_of(held_.begin(), held_.end(), [](const auto& entry) {
      return entry.second.restartable && !entry.second.ended;
    });
    if (any) {
      std::fprintf(stderr,
                   "gpufleet agent: no answer from the controller for half its lease; "
                   "restartable jobs stop (the controller will requeue them)\n");
    }
    self_fenced_ = true;
  }
  cgroups_.ReleasePending();
  net::Heartbeat beat = Report(now_ms);
  beat.wait_ms = options_.long_poll_ms;
  auto reply = link_->Exchange(beat);
  if (!reply) {
    if (!outage_reported_) {
      std::fprintf(stderr, "gpufleet agent: %s; jobs keep running; retrying\n",
                   reply.error().c_str());
      outage_reported_ = true;
    }
    return core::Error{reply.error()};
  }
  if (outage_reported_) {
    std::fprintf(stderr, "gpufleet agent: the controller answers again\n");
    outage_reported_ = false;
  }
  self_fenced_ = false;
  last_ok_ms_ = now_ms;
  // The deadline moves half a lease ahead; rewritten once it has slipped an eighth of a lease
  // (not at every beat: up's own node beats up to 20 times a second). Before Apply, whose
  // launches take time: the jobs already running must not be fenced while they happen.
  // When the reply may start jobs, always, from the clock after the exchange (its long poll may
  // have taken a while): the launches' time budget is counted from this deadline.
  lease_ms_ = reply.value().lease_ms;
  const bool may_launch = std::any_of(
      reply.value().assignments.begin(), reply.value().assignments.end(),
      [&](const net::Assignment& a) { return !a.started && !a.stop && !held_.count(a.id); });
  if (may_launch) {
    now_ms = std::max(now_ms,
                      static_cast<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::system_clock::now().time_since_epoch())
                                               .count()));
  }
  if (may_launch || now_ms + lease_ms_ / 2 - lease_written_ms_ >= lease_ms_ / 8 ||
      lease_written_ms_ == 0) {
    lease_written_ms_ = now_ms + lease_ms_ / 2;
    WriteLease(lease_written_ms_);
  }
  return Apply(reply.value());
}

}  // namespace gpufleet::agent

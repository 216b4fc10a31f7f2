#include "server/up_server.h"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "advise/own_hardware.h"
#include "agent/node_agent.h"
#include "agent/run_as.h"
#include "agent/sample_json.h"
#include "cloud/provider.h"
#include "controller/api_server.h"
#include "controller/auth.h"
#include "controller/autoscaler.h"
#include "controller/controller.h"
#include "controller/in_process_link.h"
#include "controller/job_retention.h"
#include "controller/log_retention.h"
#include "controller/standby.h"
#include "core/duration.h"
#include "core/text.h"
#include "gpu/gpu_probe.h"
#include "gpu/sampler.h"
#include "gpu/topology_links.h"
#include "net/http_server.h"
#include "net/private_file.h"
#include "net/tls.h"
#include "net/tls_identity.h"
#include "scale/autoscale_config.h"
#include "server/leader_lease.h"
#include "store/store.h"

namespace gpufleet::server {
namespace {

// The node agent in `up`'s own process beats when there is news (a job of its ended, or the
// controller has work for it: see ControllerOptions::on_local_node_change), else this often
// (usage figures, log chunks, GPU health).
constexpr int kLocalIdleBeatMs = 250;
// How often the controller's log folder is swept for retention (controller/log_retention.h): a
// user's ended jobs' logs can go past their quota by what ends in this time (their running jobs'
// logs are held to it as they arrive: ControllerOptions::log_quota_bytes).
constexpr int64_t kLogSweepMs = 10 * 60'000;
// Expired tokens are deleted a week after they expired (`token list` shows them until then).
constexpr int64_t kExpiredTokenKeepMs = 7 * 24 * 3600'000LL;
// A job's log reaches the controller's copy in chunks of at most this much per beat.
constexpr int64_t kLocalLogBudget = int64_t{8} << 20;

std::string LocalUser() {
  if (passwd* pw = getpwuid(geteuid())) return pw->pw_name;
  return "uid" + std::to_string(geteuid());
}

// Writes `text` to `path` readable by the owner only, replacing it atomically. The temporary
// file is created fresh (O_EXCL, mode 0600 from the start): a `<path>.tmp` planted beforehand,
// a symlink above all, is removed, never followed or written through.
bool WritePrivate(const std::string& path, const std::string& text) {
  return net::WritePrivateFile(path, text).ok();
}

// The local admin and its token in `token_path` (0600), shown to clients on this machine. The
// account (LocalUser, admin) is made at the first start, when the store has no user yet, and
// again with a fresh token when the file is absent: whoever may delete that file may also replace
// the store, so this is the machine owner's way back in, and it is audited. Otherwise nothing is
// written, so a token an admin revoked, or a local user an admin removed or re-added without
// admin rights, stays so across restarts (the token in the file then simply no longer works,
// which is said on stderr).
core::Result<bool> EnsureLocalAdmin(store::Store& store, const std::string& token_path,
                                    const char* self) {
  std::string token;
  if (std::ifstream in(token_path); in) std::getline(in, token);
  auto users = store.Users();
  if (!users) return users.failure();
  std::string why;
  if (!token.empty()) {
    auto holder = store.CredentialOf(controller::Sha256Hex(token), controller::NowMs());
    if (!holder) return holder.failure();
    if (holder.value().user) return true;  // it still works: nothing to do
    if (!users.value().empty()) {
      std::fprintf(
          stderr,
          "%s: the token in %s no longer works (revoked, expired, or its user removed); clients "
          "on this machine need another one (an admin makes it with `gpufleet token "
          "create`), or remove that file and restart to make %s an admin again\n",
          self, token_path.c_str(), LocalUser().c_str());
      return true;
    }
    why = "the first user of this store";
  } else {
    auto fresh = controller::NewToken();
    if (!fresh) return fresh.failure();
    token = fresh.value();
    if (!WritePrivate(token_path, token + "\n")) {
      return core::Error{"cannot write " + token_path + " (is the data directory writable?)"};
    }
    why = users.value().empty() ? "the first user of this store"
                                : "a new token, as " + token_path + " was absent";
  }
  if (auto r = store.PutUser(LocalUser(), controller::Sha256Hex(token), true); !r) return r;
  if (auto r = store.Audit(0, "", "user added", LocalUser() + " (admin, at startup: " + why + ")",
                           controller::NowMs());
      !r) {
    std::fprintf(stderr, "%s: audit log: %s\n", self, r.error().c_str());
  }
  return true;
}

// The data directory holds every job's argv and environment, logs and the admin token: it and
// everything the server creates in it are its owner's only (umask 077, the folder 0700, also
// when an older version made it 0755). Jobs get the usual umask back (Runner).
// It must be this account's own (net::PrepareOwnDirectory).
bool PrepareDataDir(const std::string& data_dir, const char* self) {
  ::umask(077);
  if (auto prepared = net::PrepareOwnDirectory(data_dir); !prepared) {
    std::fprintf(stderr, "%s: --data-dir: %s\n", self, prepared.error().c_str());
    return false;
  }
  return true;
}

// RunUpOnce's status when this controller lost the lead: RunUp stands by again.
constexpr int kLostTheLead = -100;

std::string ControllerUrl(const net::ListenAddress& address, int port, bool tls) {
  // A wildcard address is reached at loopback from here (and loopback is in the certificate).
  std::string url_host = address.host;
  if (url_host == "0.0.0.0" || url_host.empty()) url_host = "127.0.0.1";
  if (url_host == "::") url_host = "::1";
  if (url_host.find(':') != std::string::npos) url_host = "[" + url_host + "]";
  return std::string(tls ? "https://" : "http://") + url_host + ":" + std::to_string(port);
}

// This controller's id in the leader lease: its host, process and a random part, so that a
// restarted controller is a new holder.
std::string HolderId() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  uint64_t random = 0;
  if (std::ifstream in("/dev/urandom", std::ios::binary); in) {
    in.read(reinterpret_cast<char*>(&random), sizeof random);
  }
  char tail[32];
  std::snprintf(tail, sizeof tail, "%08x", static_cast<unsigned>(random));
  return std::string(host) + ":" + std::to_string(::getpid()) + ":" + tail;
}

int RunUpOnce(const UpOptions& o);

// Standing down: when the lease is lost, or a write of the fleet's state fails (the store and
// this controller's memory may then disagree), the controller stops serving, drops what it holds
// in memory and stands by again (RunUp), like a freshly started one. Thread-safe; the first
// reason counts.
class StandDown {
 public:
  explicit StandDown(const char* self) : self_(self) {}
  void operator()(const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!why_.empty()) return;
    why_ = why;
    std::fprintf(stderr, "%s: %s; standing down\n", self_, why.c_str());
    if (serving_ != nullptr) serving_->Stop();
  }
  bool happened() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return !why_.empty();
  }
  // The server to stop (nullptr: none now); one stood down already is stopped at once (a Stop
  // before Serve holds).
  void Serving(net::HttpServer* server) {
    std::lock_guard<std::mutex> lock(mutex_);
    serving_ = server;
    if (serving_ != nullptr && !why_.empty()) serving_->Stop();
  }

 private:
  const char* self_;
  mutable std::mutex mutex_;
  std::string why_;
  net::HttpServer* serving_ = nullptr;
};

}  // namespace

int RunUp(const UpOptions& o) {
  const char* self = o.controller_only ? "gpufleet controller" : "gpufleet up";
  if (!PrepareDataDir(o.data_dir, self)) return 1;
  // One server per data directory, for the life of this process (its leader terms included).
  auto lock = net::LockDirectory(o.data_dir);
  if (!lock) {
    std::fprintf(stderr, "%s: --data-dir: %s\n", self, lock.error().c_str());
    return 1;
  }
  for (int lost = 0;; ++lost) {
    const int status = RunUpOnce(o);
    if (status != kLostTheLead) return status;
    // Stands by again; a controller that keeps losing its lead (an overloaded store) waits a
    // little more each time, up to 5 s.
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(5000, 100 * (1 << std::min(lost, 6)))));
  }
}

namespace {

int RunUpOnce(const UpOptions& o) {
  const char* self = o.controller_only ? "gpufleet controller" : "gpufleet up";
  if (!(o.lease_s >= 0.2)) {
    std::fprintf(stderr, "%s: --lease must be at least 0.2 seconds\n", self);
    return 2;
  }
  auto address = net::ParseListenAddress(o.listen);
  if (!address) {
    std::fprintf(stderr, "%s: %s\n", self, address.error().c_str());
    return 2;
  }
  const std::string data_dir = o.data_dir;
  const sigset_t stop_signals = net::BlockStopSignals();  // before any thread starts
  if (!PrepareDataDir(data_dir, self)) return 1;
  // https unless told otherwise or only this machine can connect (net/tls_identity.h).
  controller::ApiServerOptions api_options;
  if (!o.ui_dir.empty()) {
    if (!std::filesystem::is_directory(o.ui_dir)) {
      std::fprintf(stderr, "%s: --ui-dir: '%s' is not a directory\n", self, o.ui_dir.c_str());
      return 2;
    }
    api_options.ui_dir = o.ui_dir;
  }
  api_options.metrics_need_token = o.metrics_auth;
  api_options.user_write_rate = o.user_write_rate;
  api_options.user_write_burst = o.user_write_burst;
  api_options.behind_https_proxy = o.behind_https_proxy;
  api_options.allowed_hosts = o.allowed_hosts;
  if (o.user_token_lifetime != "0" && o.user_token_lifetime != "off") {
    const auto seconds = core::ParseDurationSeconds(o.user_token_lifetime);
    if (!seconds || *seconds < 3600) {
      std::fprintf(stderr,
                   "%s: --user-token-lifetime '%s': expected a duration from 1 h to 366 d, "
                   "such as 90d (0: user tokens have no end unless asked for)\n",
                   self, o.user_token_lifetime.c_str());
      return 2;
    }
    api_options.user_token_max_ttl_s = *seconds;
  }
  std::string ca_file;  // the cluster CA, for agents the autoscaler starts
  const bool tls =
      o.tls == "on" || (o.tls == "auto" && !core::IsLoopbackHost(address.value().host));
  if (tls) {
    auto identity = net::EnsureTlsIdentity((std::filesystem::path(data_dir) / "tls").string(),
                                           net::DefaultTlsNames(address.value().host, o.tls_names));
    if (!identity) {
      std::fprintf(stderr, "%s: %s%s\n", self,
                   identity.failure().field.empty() ? "" : "--tls-san: ", identity.error().c_str());
      return identity.failure().field.empty() ? 1 : 2;
    }
    auto context = net::TlsServerContext::Create(identity.value().chain_file,
                                                 identity.value().key_file);
    if (!context) {
      std::fprintf(stderr, "%s: %s\n", self, context.error().c_str());
      return 1;
    }
    api_options.tls = context.value();
    api_options.ca_sha256 = identity.value().ca_sha256;
    ca_file = identity.value().ca_file;
    std::fprintf(stderr,
                 "%s: https with the cluster CA %s (sha256 %s): give it to users as "
                 "GPUFLEET_CA, or join agents with `gpufleet token create --join`\n",
                 self, identity.value().ca_file.c_str(), identity.value().ca_sha256.c_str());
  } else if (!core::IsLoopbackHost(address.value().host)) {
    std::fprintf(stderr,
                 "%s: WARNING: --tls off on %s: tokens, jobs and their environments travel in "
                 "clear to anyone on the network\n",
                 self, address.value().host.c_str());
  }

  const bool shared_store = store::IsPostgresUri(o.store);
  if (!o.store.empty() && !shared_store) {
    std::fprintf(stderr,
                 "%s: --store: expected postgresql://USER@HOST/DB or a libpq connection "
                 "string (host=... dbname=...); leave it out for SQLite in the data directory "
                 "(the value is not shown: it may hold a password)\n",
                 self);
    return 2;
  }
  if (!(o.leader_lease_s >= 0.5 && o.leader_lease_s <= 600)) {
    std::fprintf(stderr, "%s: --leader-lease must be between 0.5 and 600 seconds\n", self);
    return 2;
  }
  if (shared_store && address.value().port == 0) {
    std::fprintf(stderr,
                 "%s: --listen needs a port with a shared store: standbys and clients name "
                 "this controller by it\n", self);
    return 2;
  }
  auto store = shared_store ? store::OpenPostgresStore(o.store) : store::OpenSqliteStore(data_dir);
  // A shared database that is down (restarting, unreachable) is waited for, with backoff, as
  // long as it takes: a controller that gives up would leave the fleet without a standby. A
  // connection string that does not parse (kInvalid) is not retried.
  for (int64_t backoff_ms = 250;
       !store && shared_store && store.failure().code != core::ErrorCode::kInvalid;
       backoff_ms = std::min<int64_t>(backoff_ms * 2, 5000)) {
    std::fprintf(stderr, "%s: %s; retrying in %.2g s\n", self, store.error().c_str(),
                 static_cast<double>(backoff_ms) / 1000);
    const timespec wait{backoff_ms / 1000, (backoff_ms % 1000) * 1000000};
    if (::sigtimedwait(&stop_signals, nullptr, &wait) > 0) {
      std::fprintf(stderr, "%s: stopped (waiting for the store)\n", self);
      return 0;
    }
    store = store::OpenPostgresStore(o.store);
  }
  if (!store) {
    std::fprintf(stderr, "%s: %s\n", self, store.error().c_str());
    return 1;
  }
  // Leadership: a SQLite store has one controller, which leads at once. Controllers sharing a
  // PostgreSQL store stand by, answering 503 naming the leader, until the lease is theirs.
  LeaderLeaseOptions lease_options;
  lease_options.holder = HolderId();
  lease_options.url = ControllerUrl(address.value(), address.value().port, api_options.tls != nullptr);
  lease_options.lease_ms = static_cast<int64_t>(o.leader_lease_s * 1000);
  StandDown stand_down(self);  // before the lease: its renewer calls it
  LeaderLease lease(*store.value(), lease_options);
  auto say = [self](const std::string& what) {
    std::fprintf(stderr, "%s: %s\n", self, what.c_str());
  };
  if (!shared_store) {
    if (!lease.WaitToLead(say)) return 1;
  } else {
    controller::StandbyServer standby([&lease] { return lease.Known(); }, api_options.tls);
    standby.http().AllowHosts(o.allowed_hosts);
    if (auto bound = standby.Bind(address.value()); !bound) {
      std::fprintf(stderr, "%s: %s\n", self, bound.error().c_str());
      return 1;
    }
    std::atomic<bool> led{false};
    std::thread waiter([&] {
      led = lease.WaitToLead(say);
      standby.http().Stop();
    });
    bool signalled = false;
    net::ServeUntilStopSignal(standby.http(), stop_signals, &signalled);
    lease.Cancel();
    waiter.join();
    if (!led || signalled) {
      // A stop signal that came as the lease was won still stops: the lease is handed back at
      // once, so another standby takes over without waiting for it to expire.
      if (led) lease.StopAndResign();
      std::fprintf(stderr, "%s: stopped (standing by)\n", self);
      return 0;
    }
    std::fprintf(stderr, "%s: leading (epoch %lld); taking over the fleet\n", self,
                 static_cast<long long>(lease.epoch()));
  }
  // After taking the lead, a failure of the shared store stands down rather than exits.
  auto failed_leading = [&](int status) {
    if (!shared_store) return status;
    lease.StopAndResign();
    return kLostTheLead;
  };
  if (shared_store) {
    // The lease is kept from now on, before the (possibly long) recovery below.
    lease.StartRenewing([&stand_down](const std::string& why) { stand_down("lost the lead: " + why); });
  }
  // This machine's node. On a shared store every `up` has its own node, named after its host (a
  // standby's node runs nothing: its agent runs while its controller leads).
  std::string local_name = "local";
  if (shared_store) {
    char host_name[256] = {};
    ::gethostname(host_name, sizeof host_name - 1);
    local_name = std::string("up-") + host_name;
  }
  // This machine's GPUs: their number and model are all the scheduler needs here.
  int gpus = 0;
  std::string model;
  bool simulated = false;
  gpu::OpenedProbe opened;
  std::unique_ptr<gpu::Sampler> sampler;  // the local node's GPU samples, for /v1/gpus
  agent::HostInfo host;
  if (!o.controller_only) {
    gpu::ProbeOptions probe_options;
    probe_options.simulated_gpus = o.simulated_gpus;
    probe_options.nvml_library = o.nvml_library;
    opened = gpu::OpenProbe(probe_options);
    host.hostname = local_name;
    host.backend = opened.probe->BackendName();
    host.driver_version = opened.probe->DriverVersion();
    host.notice = opened.notice;
    gpu::SamplerOptions sampling;
    sampling.history_s = 60;  // the controller shows only the latest sample
    sampling.aggregate_keep_s = 3600;
    sampler = std::make_unique<gpu::Sampler>(*opened.probe, sampling);
    gpus = opened.probe->DeviceCount();
    if (gpus > 0) model = opened.probe->Sample(0, 0).name;
    if (model.rfind("SIMULATED ", 0) == 0) model = model.substr(10);  // the catalog's name
    simulated = opened.probe->IsSimulated();
    if (simulated) {
      std::fprintf(stderr,
                   "gpufleet up: *** SIMULATED GPUs: %s. Jobs run for real, but their "
                   "CUDA_VISIBLE_DEVICES name GPUs that do not exist. ***\n",
                   opened.notice.c_str());
    }
  }

  // The local user's token, shown to clients through a 0600 file in the data directory.
  const std::string token_path = (std::filesystem::path(data_dir) / "token").string();
  if (auto r = EnsureLocalAdmin(*store.value(), token_path, self); !r) {
    std::fprintf(stderr, "%s: %s\n", self, r.error().c_str());
    return failed_leading(1);
  }

  agent::RunAsPolicy run_as;
  run_as.node_name = local_name;
  run_as.allow_root = o.allow_root_jobs;
  run_as.min_uid = o.min_job_uid;
  run_as.shared_dev_shm = o.shared_dev_shm;
  for (const std::string& map : o.run_as_maps) {
    if (auto parsed = agent::ParseRunAsMap(map, run_as.user_map); !parsed) {
      std::fprintf(stderr, "%s: %s\n", self, parsed.error().c_str());
      return 2;
    }
  }
  if (auto safe = agent::CheckRunAsMapForAgent(run_as, ::geteuid()); !safe) {
    std::fprintf(stderr, "%s: --run-as-map: %s\n", self, safe.error().c_str());
    return failed_leading(2);
  }
  // Written when the controller has news for the local node; its agent waits on it.
  const int local_news = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (local_news < 0) {
    std::fprintf(stderr, "%s: eventfd: %s\n", self, std::strerror(errno));
    return 1;
  }
  controller::ControllerOptions options;
  options.data_dir = data_dir;
  if (!o.controller_only) {
    options.local_node = local_name;
    options.on_local_node_change = [local_news] {
      const uint64_t one = 1;
      [[maybe_unused]] const ssize_t n = ::write(local_news, &one, sizeof one);
    };
  }
  options.lease_ms = static_cast<int64_t>(o.lease_s * 1000);
  if (shared_store) {
    options.may_act = [&lease] { return lease.Leading(); };
    options.on_store_write_failed = [&stand_down](const std::string& why) {
      stand_down("the store did not record job state changes (" + why + ")");
    };
  }
  options.queue_policy = o.queue_policy;
  options.placement_policy = o.placement_policy;
  options.containers.allowed_images = o.container_allow_images;
  for (const std::string& prefix : o.container_allow_mounts) {
    if (prefix.empty() || prefix[0] != '/') {
      std::fprintf(stderr, "%s: --container-allow-mount '%s': give an absolute directory\n", self,
                   prefix.c_str());
      return 2;
    }
  }
  options.containers.allowed_mount_sources = o.container_allow_mounts;
  if (auto pull = core::ParsePullPolicy(o.container_pull)) {
    options.containers.pull = pull.value();
  } else {
    std::fprintf(stderr, "%s: --container-pull: %s\n", self, pull.error().c_str());
    return 2;
  }
  options.stop_grace_s = o.stop_grace_s;
  options.elastic_grow_after_s = o.elastic_grow_after_s;
  for (const std::string& kv : o.queue_weights) {
    const std::size_t eq = kv.find('=');
    char* end = nullptr;
    const double weight = eq == std::string::npos ? 0 : std::strtod(kv.c_str() + eq + 1, &end);
    if (eq == std::string::npos || eq == 0 || end == nullptr || *end != '\0' || !(weight > 0)) {
      std::fprintf(stderr, "%s: --queue-weight '%s': expected QUEUE=WEIGHT with a weight above 0\n",
                   self, kv.c_str());
      return 2;
    }
    options.queue_weights[kv.substr(0, eq)] = weight;
  }
  // Idle reclaim: "30m", "2h", ...; "0" or "off" for none.
  auto idle_ms = [](const std::string& text) -> std::optional<int64_t> {
    if (text.empty() || text == "0" || text == "off") return 0;
    auto seconds = core::ParseDurationSeconds(text);
    if (!seconds || *seconds < 60) return std::nullopt;
    return *seconds * 1000;
  };
  if (auto ms = idle_ms(o.idle_timeout)) {
    options.idle_timeout_ms = *ms;
  } else {
    std::fprintf(stderr, "%s: --idle-timeout '%s': expected a duration of at least 1 min, such "
                 "as 30m or 2h (0: off)\n", self, o.idle_timeout.c_str());
    return 2;
  }
  for (const std::string& kv : o.queue_idle_timeouts) {
    const std::size_t eq = kv.find('=');
    const auto ms = eq == std::string::npos ? std::nullopt : idle_ms(kv.substr(eq + 1));
    if (eq == std::string::npos || eq == 0 || !ms || kv.substr(eq + 1).empty()) {
      std::fprintf(stderr, "%s: --idle-timeout-queue '%s': expected QUEUE=DURATION (at least "
                   "1 min, or 0 for exempt)\n", self, kv.c_str());
      return 2;
    }
    options.queue_idle_timeout_ms[kv.substr(0, eq)] = *ms;
  }
  // A retention flag's milliseconds (0: for good); nullopt, saying why, when it is malformed.
  const auto retention_ms = [self](const char* flag, const std::string& text,
                                   const char* what) -> std::optional<int64_t> {
    if (text == "0" || text == "off") return int64_t{0};
    if (auto seconds = core::ParseDurationSeconds(text); seconds && *seconds >= 3600) {
      return *seconds * 1000;
    }
    std::fprintf(stderr,
                 "%s: %s '%s': expected a duration of at least 1 h, such as 30d or 12h (0: keep "
                 "%s for good)\n",
                 self, flag, text.c_str(), what);
    return std::nullopt;
  };
  controller::LogRetention log_retention;
  log_retention.user_quota_bytes = o.log_quota_mib * (int64_t{1} << 20);
  const auto log_age_ms = retention_ms("--log-retention", o.log_retention, "logs");
  const auto job_age_ms = retention_ms("--job-retention", o.job_retention, "ended jobs");
  if (!log_age_ms || !job_age_ms) return 2;
  log_retention.max_age_ms = *log_age_ms;
  if (!o.own_hardware.empty()) {
    std::ifstream in(o.own_hardware);
    std::stringstream text;
    text << in.rdbuf();
    auto own = in ? advise::ParseOwnHardware(text.str())
                  : core::Result<advise::OwnHardware>(core::Error{"cannot read it"});
    if (!own) {
      std::fprintf(stderr, "%s: --own-hardware %s: %s\n", self, o.own_hardware.c_str(),
                   own.error().c_str());
      return 2;
    }
    options.own_hardware = own.value();
  }
  options.max_live_jobs_per_user = o.max_jobs_per_user;
  options.max_job_bytes_per_user = o.max_job_bytes_per_user;
  options.log_quota_bytes = log_retention.user_quota_bytes;
  for (const std::string& text : o.max_priorities) {
    const std::size_t eq = text.find('=');
    const std::string number = eq == std::string::npos ? text : text.substr(eq + 1);
    char* end = nullptr;
    errno = 0;
    const long value = std::strtol(number.c_str(), &end, 10);
    if (number.empty() || *end != '\0' || errno != 0 || value < -1000000 || value > 1000000 ||
        eq == 0) {
      std::fprintf(stderr,
                   "%s: --max-priority '%s': expected N or USER=N with N in -1000000..1000000\n",
                   self, text.c_str());
      return 2;
    }
    if (eq == std::string::npos) {
      options.max_user_priority = static_cast<int>(value);
    } else {
      options.user_max_priority[text.substr(0, eq)] = static_cast<int>(value);
    }
  }
  std::optional<scale::AutoscaleConfig> autoscale;
  if (!o.autoscale.empty()) {
    std::ifstream in(o.autoscale);
    std::stringstream text;
    text << in.rdbuf();
    auto config = in ? scale::ParseAutoscaleToml(text.str(), o.autoscale,
                                                 core::GpuCatalog::Builtin(), true)
                     : core::Result<scale::AutoscaleConfig>(core::Error{"cannot read it"});
    if (!config) {
      std::fprintf(stderr, "%s: --autoscale %s: %s\n", self, o.autoscale.c_str(),
                   config.error().c_str());
      return 2;
    }
    autoscale = std::move(config).value();
    // Submits are checked against what the fleet may grow to, not only what it has now: each
    // group's max, within what the spend cap buys (a gang it cannot buy is refused at submit,
    // not left to hold the queue's reservation for good).
    // A job that is not restartable never goes on spot: it counts on what the cap buys on demand.
    options.growth_nodes_on_demand.emplace();
    for (const scale::NodeGroup& g : autoscale->groups) {
      const core::NodeSpec node{g.name, g.cpu_milli, g.memory_mib, g.gpus, g.model};
      for (int k = 0; k < scale::GrowthNodeCount(g, autoscale->policy); ++k) {
        options.growth_nodes.push_back(node);
      }
      for (int k = 0; k < scale::GrowthNodeCount(g, autoscale->policy, /*spot=*/false); ++k) {
        options.growth_nodes_on_demand->push_back(node);
      }
    }
  }
  auto made = controller::Controller::Create(*store.value(), options);
  if (!made) {
    std::fprintf(stderr, "%s: %s\n", self, made.error().c_str());
    return 2;
  }
  controller::Controller& ctl = *made.value();
  if (auto r = ctl.Recover(controller::NowMs()); !r) {
    std::fprintf(stderr, "%s: %s\n", self, r.error().c_str());
    return failed_leading(1);
  }
  // This machine's node: the same agent as on any other node, linked in-process. It re-adopts
  // its jobs and registers before the API serves, so submits are checked against its GPUs.
  std::unique_ptr<agent::NodeAgent> node;
  if (!o.controller_only) {
    agent::NodeAgentOptions n;
    n.node_name = local_name;
    n.address = o.advertise;
    n.data_dir = (std::filesystem::path(data_dir) / "node").string();
    n.gpus = gpus;
    n.gpu_model = model;
    n.simulated = simulated;
    if (!simulated) n.gpu_links = gpu::LinksFromTopology(opened.probe->Topology());
    for (int g = 0; g < gpus && !simulated; ++g) {
      n.gpu_device_nodes.push_back(opened.probe->DeviceNode(g));
    }
    n.long_poll_ms = 0;  // answered at once: the agent waits for news itself (below)
    n.run_as = run_as;
    n.log_limit_bytes = o.log_limit_mib * (int64_t{1} << 20);
    n.container_runtime = o.container_runtime;
    n.log_budget_bytes = kLocalLogBudget;
    gpu::Sampler* s = sampler.get();
    node = std::make_unique<agent::NodeAgent>(
        n, std::make_unique<controller::InProcessLink>(ctl),
        [s, host] { return agent::GpusToJson(host, s->Latest()); },
        [s] { return agent::FiguresOf(s->Latest()); });
    if (auto r = node->Recover(); !r) {
      std::fprintf(stderr, "%s: %s\n", self, r.error().c_str());
      return failed_leading(1);
    }
    if (auto r = node->Beat(controller::NowMs()); !r) {
      std::fprintf(stderr, "%s: %s\n", self, r.error().c_str());
      return failed_leading(1);
    }
  }
  if (shared_store) {
    api_options.leading = [&lease] { return lease.Leading(); };
    api_options.leader = [&lease] { return lease.Known(); };
  }
  controller::ApiServer api(ctl, api_options);
  auto port = api.Bind(address.value());
  if (!port) {
    std::fprintf(stderr, "%s: %s\n", self, port.error().c_str());
    return 1;
  }
  const std::string url = ControllerUrl(address.value(), port.value(), api_options.tls != nullptr);
  WritePrivate((std::filesystem::path(data_dir) / "server").string(), url + "\n");
  std::unique_ptr<controller::Autoscaler> autoscaler;
  if (autoscale) {
    cloud::LocalProviderOptions local;
    local.work_dir = (std::filesystem::path(data_dir) / "instances").string();
    if (o.allow_root_jobs) local.extra_agent_args.push_back("--allow-root-jobs");
    local.extra_agent_args.push_back("--min-job-uid");
    local.extra_agent_args.push_back(std::to_string(o.min_job_uid));
    if (o.shared_dev_shm) local.extra_agent_args.push_back("--shared-dev-shm");
    auto provider = cloud::MakeProvider(*autoscale, local);
    if (!provider) {
      std::fprintf(stderr, "%s: --autoscale %s: %s\n", self, o.autoscale.c_str(),
                   provider.error().c_str());
      return 2;
    }
    controller::AutoscalerOptions a;
    a.config = *autoscale;
    a.controller_url = url;
    a.ca_sha256 = api_options.ca_sha256;
    a.ca_file = ca_file;
    if (shared_store) a.may_act = [&lease] { return lease.Leading(); };  // SQLite: always
    autoscaler = std::make_unique<controller::Autoscaler>(*store.value(), ctl,
                                                          std::move(provider).value(), a);
    api.SetAutoscaler(autoscaler.get());
  }
  if (sampler) sampler->Start();
  ctl.Start();
  if (autoscaler) autoscaler->Start();
  // Expired tokens, job and log retention: at start, then every kLogSweepMs, on a thread of its
  // own (a sweep reads the log folder and the store, never the controller's lock).
  std::mutex sweep_mutex;
  std::condition_variable sweep_wake;
  bool stop_sweeping = false;
  std::thread sweeps;
  const bool sweep_logs = log_retention.max_age_ms > 0 || log_retention.user_quota_bytes > 0;
  sweeps = std::thread([&,
                        sweeper = controller::LogSweeper(*store.value(), ctl.Logs(), log_retention),
                        history = controller::JobRetentionSweeper(*store.value(), ctl.Logs(),
                                                                  *job_age_ms)]() mutable {
    std::unique_lock<std::mutex> lock(sweep_mutex);
    while (!stop_sweeping) {
      lock.unlock();
      const auto stopping = [&] {
        std::lock_guard<std::mutex> stopped(sweep_mutex);
        return stop_sweeping;
      };
      // Ended jobs first (their logs go with them); a standby writes nothing.
      if (!shared_store || lease.Leading()) {
        const auto expired =
            store.value()->RemoveExpiredTokens(controller::NowMs() - kExpiredTokenKeepMs);
        if (!expired) {
          std::fprintf(stderr, "%s: removing expired tokens: %s\n", self, expired.error().c_str());
        }
        const controller::JobRetentionStats purged =
            history.SweepOnce(controller::NowMs(), stopping);
        if (!purged.error.empty()) {
          std::fprintf(stderr, "%s: job retention: %s\n", self, purged.error.c_str());
        }
        if (purged.jobs_stuck > 0) {
          std::fprintf(stderr,
                       "%s: job retention: the logs of %lld jobs past it could not be removed "
                       "(see their files under logs/); kept, tried again at the next sweep\n",
                       self, static_cast<long long>(purged.jobs_stuck));
        }
        if (purged.error.empty() && purged.jobs_removed > 0) {
          std::fprintf(stderr, "%s: job retention: removed %lld jobs that ended over %s ago\n",
                       self, static_cast<long long>(purged.jobs_removed), o.job_retention.c_str());
        }
      }
      const controller::LogSweepStats swept = sweep_logs
                                                  ? sweeper.SweepOnce(controller::NowMs(), stopping)
                                                  : controller::LogSweepStats{};
      if (!swept.error.empty()) {
        std::fprintf(stderr, "%s: log retention: cannot ask the store: %s\n", self,
                     swept.error.c_str());
      } else if (swept.jobs_removed > 0) {
        std::fprintf(stderr, "%s: log retention: removed the logs of %lld jobs (%lld MiB)\n", self,
                     static_cast<long long>(swept.jobs_removed),
                     static_cast<long long>(swept.bytes_removed >> 20));
      }
      lock.lock();
      sweep_wake.wait_for(lock, std::chrono::milliseconds(kLogSweepMs),
                          [&] { return stop_sweeping; });
    }
  });
  std::atomic<bool> stop_beats{false};
  std::thread beats;
  // Well inside the lease, which the local node must keep like any other.
  const int idle_beat_ms = static_cast<int>(
      std::min<int64_t>(kLocalIdleBeatMs, options.lease_ms / 4));
  if (node) {
    beats = std::thread([&] {
      while (!stop_beats.load()) {
        auto changed = node->Beat(controller::NowMs());
        if (changed.ok() && changed.value()) continue;
        node->WaitForNews(idle_beat_ms, local_news);
      }
    });
  }
  stand_down.Serving(&api.http());
  const bool clean = net::ServeUntilStopSignal(api.http(), stop_signals);
  stand_down.Serving(nullptr);
  stop_beats = true;
  if (beats.joinable()) {
    node->Interrupt();               // a beat launching a storm of jobs stops launching
    options.on_local_node_change();  // wakes the agent's wait
    beats.join();
  }
  if (sweeps.joinable()) {
    {
      std::lock_guard<std::mutex> lock(sweep_mutex);
      stop_sweeping = true;
    }
    sweep_wake.notify_all();
    sweeps.join();
  }
  if (autoscaler) autoscaler->Stop();
  ctl.Stop();
  // `local_news` stays open: a heartbeat handler still finishing may write to it, and the
  // process exits once this returns.
  if (sampler) sampler->Stop();
  if (stand_down.happened()) {
    std::fprintf(stderr, "%s: stood down; standing by again\n", self);
    lease.StopAndResign();
    return kLostTheLead;
  }
  lease.StopAndResign();  // after the last write: a standby takes over at once
  std::fprintf(stderr, "%s: stopped\n", self);
  return clean ? 0 : 1;
}

}  // namespace

}  // namespace gpufleet::server

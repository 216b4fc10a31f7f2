#include "agent/runner.h"

#include <fcntl.h>
#include <grp.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "agent/job_shim.h"
#include "agent/process_tree.h"
#include "core/job.h"
#include "core/text.h"
#include "net/private_file.h"

namespace gpufleet::agent {
namespace {

// Writes all of `data` to `fd`; false (errno set) on a failure.
bool WriteAll(int fd, const std::string& data) {
  for (std::size_t done = 0; done < data.size();) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// `fd` moved to a number above kShimEnvFd (close-on-exec), the old one closed: the spawn's dup2s
// onto 0..4 must not overwrite a source still to be copied, and another thread of the server may
// free a low number at any moment, which the next descriptor opened here takes. Unchanged when it
// is already above; -1 (errno set, `fd` closed) when no descriptor above is free: kept low, it
// could be overwritten by the spawn's dup2s before it is copied.
int AboveShimDescriptors(int fd) {
  if (fd < 0 || fd > kShimEnvFd) return fd;
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, kShimEnvFd + 1);
  const int err = errno;
  close(fd);
  errno = err;
  return moved;
}

std::string JoinedPaths(const std::vector<std::string>& paths) {
  std::string out;
  for (const std::string& p : paths) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string Join(const std::vector<int>& values) {
  std::string out;
  for (int v : values) {
    if (!out.empty()) out += ',';
    out += std::to_string(v);
  }
  return out;
}

// Variables of the agent's own that a job may see: how to find programs, the locale, the zone.
// Nothing else passes (the agent's GPUFLEET_TOKEN would let any job act as an admin).
constexpr const char* kInheritedVariables[] = {"PATH", "LANG", "LC_ALL", "TZ"};

// The job's own variables, then gpufleet's, which the job cannot override: its GPUs (as the job
// sees them: `visible_gpus`), its id, the torchrun variables (a multi-node rank's or an elastic
// job's from the controller, else one node's), GPUFLEET_RESTART_COUNT (0 unless the controller
// says), and the interface gloo and NCCL bind for a multi-node rank.
void AddJobVariables(const LaunchSpec& spec, const std::string& visible_gpus,
                     std::map<std::string, std::string>& env) {
  // gpufleet's own names are refused at submit; a job stored before that rule still never sets
  // them (a single-node job claiming GPUFLEET_NNODES=8, say).
  for (const auto& [k, v] : spec.env) {
    if (!core::IsGpufleetJobVariable(k)) env[k] = v;
  }
  env["CUDA_VISIBLE_DEVICES"] = visible_gpus;
  // The indices are NVML's, in PCI bus order; CUDA's own default order (fastest first) would
  // make them other GPUs on a node of mixed models: another job's.
  env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  env["GPUFLEET_JOB_ID"] = std::to_string(spec.job_id);
  auto given = [&](const char* name) {
    return std::any_of(spec.launch_env.begin(), spec.launch_env.end(),
                       [&](const auto& kv) { return kv.first == name; });
  };
  if (!given("WORLD_SIZE")) {
    for (const auto& [k, v] : core::DistributedEnv(spec.job_id, "127.0.0.1", 1, 0,
                                                   static_cast<int>(spec.gpu_indices.size()))) {
      env[k] = v;
    }
  }
  env["GPUFLEET_RESTART_COUNT"] = "0";
  for (const auto& [k, v] : spec.launch_env) env[k] = v;
  if (given("GPUFLEET_NNODES") && !spec.node_address.empty()) {
    const std::string interface = InterfaceHolding(spec.node_address);
    for (const char* name : {"GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"}) {
      if (!interface.empty() && !env.count(name)) env[name] = interface;
    }
  }
}

// The child's environment, from scratch: the allow-listed variables and the account's identity,
// overridden by the job's own, then by gpufleet's (which the job cannot override).
std::vector<std::string> Environment(const LaunchSpec& spec, const UnixAccount& account) {
  std::map<std::string, std::string> env;
  for (const char* name : kInheritedVariables) {
    if (const char* value = std::getenv(name)) env[name] = value;
  }
  if (!env.count("PATH")) env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  env["HOME"] = account.home;
  env["USER"] = account.name;
  env["LOGNAME"] = account.name;
  AddJobVariables(spec, Join(spec.gpu_indices), env);
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

struct ExitRecord {
  int code = 0;
  int signal = 0;
  long long oom_events = 0;  // absent in records of older shims: 0
};

// "<code> <signal> [<oom events>]" from an exit file; nothing when it is absent or unreadable.
std::optional<ExitRecord> ReadExitFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return std::nullopt;
  ExitRecord r;
  const int n = std::fscanf(f, "%d %d %lld", &r.code, &r.signal, &r.oom_events);
  std::fclose(f);
  if (n < 2) return std::nullopt;
  return r;
}

// The variables a container job gets (ContainerEnvFile): the job's own, then gpufleet's, as for a
// host job, but nothing of the host's (PATH, HOME and the locale are the image's), and its GPUs
// counted from 0 (the container sees only those).
std::vector<std::pair<std::string, std::string>> ContainerEnvironment(const LaunchSpec& spec,
                                                                     const UnixAccount& account) {
  std::map<std::string, std::string> env;
  env["USER"] = account.name;
  env["LOGNAME"] = account.name;
  std::vector<int> visible;
  for (std::size_t k = 0; k < spec.gpu_indices.size(); ++k) visible.push_back(static_cast<int>(k));
  AddJobVariables(spec, Join(visible), env);
  // The job's GPUs are given as devices (CDI or device nodes); an image's own
  // NVIDIA_VISIBLE_DEVICES=all (NGC and CUDA images set it) would make an NVIDIA runtime hook
  // add every GPU of the node beside them. "void": the hook adds none.
  env["NVIDIA_VISIBLE_DEVICES"] = "void";
  return {env.begin(), env.end()};
}

}  // namespace

std::string InterfaceHolding(const std::string& address) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(address.c_str(), nullptr, &hints, &found) != 0) return "";
  ifaddrs* list = nullptr;
  std::string name;
  if (getifaddrs(&list) == 0) {
    for (addrinfo* a = found; a != nullptr && name.empty(); a = a->ai_next) {
      for (ifaddrs* i = list; i != nullptr && name.empty(); i = i->ifa_next) {
        if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != a->ai_family) continue;
        const bool same =
            a->ai_family == AF_INET
                ? reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr ==
                      reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr.s_addr
                : a->ai_family == AF_INET6 &&
                      std::memcmp(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr,
                                  &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr,
                                  sizeof(in6_addr)) == 0;
        if (same) name = i->ifa_name;
      }
    }
    freeifaddrs(list);
  }
  freeaddrinfo(found);
  return name;
}

std::string DefaultShimPath() {
  if (const char* env = std::getenv("GPUFLEET_SHIM"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ((ec ? std::filesystem::path(".") : self.parent_path()) / "gpufleet-shim").string();
}

const std::string& PrivateShmUnavailable() {
  static const std::string why = []() -> std::string {
    if (geteuid() != 0) return "the agent is not root";
    int report[2] = {-1, -1};
    if (pipe2(report, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
    const pid_t child = fork();
    if (child < 0) {
      close(report[0]);
      close(report[1]);
      return std::string("fork: ") + std::strerror(errno);
    }
    if (child == 0) {
      int err = 0;
      if (unshare(CLONE_NEWNS | CLONE_NEWIPC) != 0 ||
          mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0 ||
          mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0) {
        err = errno;
      }
      (void)!write(report[1], &err, sizeof err);
      _exit(0);
    }
    close(report[1]);
    int err = -1;
    ssize_t n;
    do {
      n = read(report[0], &err, sizeof err);
    } while (n < 0 && errno == EINTR);
    close(report[0]);
    while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
    if (n != sizeof err) return "the probe reported nothing";
    return err == 0 ? std::string()
                    : std::string("cannot make a mount and IPC namespace with a tmpfs: ") +
                          std::strerror(err);
  }();
  return why;
}

std::optional<std::string> UnsafeForRoot(const std::string& program) {
  if (geteuid() != 0) return std::nullopt;
  // The file, then every directory above it: each must be root's and writable by root alone (a
  // directory with the sticky bit, as /tmp, lets no one else replace root's entries in it).
  if (auto why = net::ReplaceableByOthers(program, 0, "the shim")) {
    return *why +
           " (anyone who can replace it would run as root; install gpufleet where only "
           "root writes)";
  }
  return std::nullopt;
}

std::string ExitFilePath(const std::string& log_path) { return log_path + ".exit"; }
std::string ContainerEnvFilePath(const std::string& log_path) { return log_path + ".env"; }
std::string ContainerIdFilePath(const std::string& log_path) { return log_path + ".cid"; }
std::string FencedFilePath(const std::string& log_path) { return log_path + ".fenced"; }

namespace {

// Field 22 of /proc/PID/stat; 0 when there is no such process, or when it is a zombie and
// `zombie_counts` is false.
uint64_t ReadStartTicks(pid_t pid, bool zombie_counts) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return 0;
  char buffer[1024];
  const std::size_t n = std::fread(buffer, 1, sizeof buffer - 1, f);
  std::fclose(f);
  buffer[n] = '\0';
  // Fields after the command name (which may hold spaces) start after the last ')'; the state is
  // field 3 (a zombie counts as gone: it has ended) and the start time field 22.
  const char* p = std::strrchr(buffer, ')');
  if (p == nullptr || p[1] == '\0' || (p[2] == 'Z' && !zombie_counts)) return 0;
  for (int field = 0; field < 20 && *p != '\0'; ++p) {
    if (*p == ' ') ++field;
  }
  return std::strtoull(p, nullptr, 10);
}

}  // namespace

uint64_t ProcessStartTicks(pid_t pid) { return ReadStartTicks(pid, false); }

std::string CurrentBootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}
uint64_t ChildStartTicks(pid_t child) { return ReadStartTicks(child, true); }

// Whether `child`'s pid still names its process group: always for our own unreaped child; for an
// adopted one only while its start time matches (an ended job's pid may belong to another now).
bool Runner::MaySignal(const Child& child) {
  if (child.own_child) return true;
  return !child.ended && ProcessStartTicks(child.pid) == child.start_ticks;
}

Runner::~Runner() {
  for (const auto& [id, child] : jobs_) {
    if (child.pidfd >= 0) close(child.pidfd);
  }
}

int Runner::OpenPidFd(pid_t pid) {
  const long fd = syscall(SYS_pidfd_open, pid, 0);  // close-on-exec
  return fd < 0 ? -1 : static_cast<int>(fd);
}

std::vector<int> Runner::ExitFds() const {
  std::vector<int> out;
  for (const auto& [id, child] : jobs_) {
    if (child.pidfd >= 0) out.push_back(child.pidfd);
  }
  return out;
}

void Runner::KillAll() {
  for (auto& [id, child] : jobs_) {
    if (!child.container_cleanup.empty()) {
      const pid_t cleanup = SpawnQuietly(child.container_cleanup);
      for (int tick = 0; cleanup > 0 && tick < 300; ++tick) {  // at most 30 s
        if (waitpid(cleanup, nullptr, WNOHANG) != 0) break;
        usleep(100 * 1000);
        if (tick == 299) {
          kill(cleanup, SIGKILL);
          waitpid(cleanup, nullptr, 0);
        }
      }
    }
    if (MaySignal(child)) {
      if (child.container_cleanup.empty()) SignalDescendants(child.pid, SIGKILL, 0, child.pidfd);
      kill(-child.pid, SIGKILL);
    }
    if (child.own_child) waitpid(child.pid, nullptr, 0);
    if (child.pidfd >= 0) close(child.pidfd);
  }
  jobs_.clear();
}

bool Runner::Adopt(int64_t job_id, const Launched& launched, const std::string& log_path,
                   const std::string& container) {
  if (jobs_.count(job_id) || launched.pid <= 0) return false;
  Child child;
  if (!container.empty()) {
    child.container_cleanup =
        ContainerRemoveArgv(container, ContainerIdFilePath(log_path), container_host_);
  }
  child.pid = launched.pid;
  child.start_ticks = launched.start_ticks;
  child.exit_path = ExitFilePath(log_path);
  // After a reboot the pid and start time may well match an unrelated process of this boot.
  // (Unknown either side: pid and start time decide, as before boot ids were recorded.)
  const std::string boot_now = CurrentBootId();
  const bool same_boot =
      launched.boot_id.empty() || boot_now.empty() || launched.boot_id == boot_now;
  const bool alive = same_boot && launched.start_ticks != 0 &&
                     ProcessStartTicks(launched.pid) == launched.start_ticks;
  if (!alive && !ReadExitFile(child.exit_path)) return false;
  child.ended = !alive;  // how it ended is on record: Reap reports it at once
  // Checked against its start time after opening, so the pidfd is of the job's process.
  if (alive) child.pidfd = OpenPidFd(launched.pid);
  if (child.pidfd >= 0 && ProcessStartTicks(launched.pid) != launched.start_ticks) {
    close(child.pidfd);
    child.pidfd = -1;
  }
  jobs_[job_id] = child;
  return true;
}

core::Result<Launched> Runner::Launch(const LaunchSpec& spec) {
  if (spec.argv.empty()) return core::Error{"job " + std::to_string(spec.job_id) + ": empty argv"};
  if (jobs_.count(spec.job_id)) {
    return core::Error{"job " + std::to_string(spec.job_id) + " is already running here"};
  }
  auto identity = ResolveRunAs(run_as_, spec.user, geteuid());
  if (!identity) return core::Error{"job " + std::to_string(spec.job_id) + ": " + identity.error()};
  // Resolved once: the file the check approves is the one run, not a path through a link that
  // may point elsewhere by then.
  std::error_code resolve_ec;
  const std::filesystem::path resolved = std::filesystem::canonical(shim_path_, resolve_ec);
  const std::string shim_program = geteuid() == 0 && !resolve_ec ? resolved.string() : shim_path_;
  if (auto unsafe = UnsafeForRoot(shim_program)) {
    return core::Error{"job " + std::to_string(spec.job_id) + ": " + *unsafe};
  }
  const UnixAccount& account = identity.value().account;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(spec.log_path).parent_path(), ec);
  const int log = AboveShimDescriptors(
      open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (log < 0) {
    return core::Error{"cannot open log " + spec.log_path + ": " + std::strerror(errno)};
  }
  // A planted link (hard or symbolic) must not make the agent hand another file to the job.
  struct stat log_stat {};
  if (fstat(log, &log_stat) != 0 || !S_ISREG(log_stat.st_mode) || log_stat.st_nlink != 1) {
    close(log);
    return core::Error{"job " + std::to_string(spec.job_id) + ": log " + spec.log_path +
                       " is not a regular file of its own; refusing to use it"};
  }
  // The job's user owns its log (and may read it); other local users may not.
  if (identity.value().switch_user) (void)!fchown(log, account.uid, account.gid);
  if (!spec.container.empty() && !container_host_.unsafe.empty()) {
    close(log);
    return core::Error{"job " + std::to_string(spec.job_id) + ": " + container_host_.unsafe};
  }
  if (!spec.container.empty() && container_host_.gpus == GpuAccess::kNone &&
      !spec.gpu_indices.empty()) {
    const std::string note =
        "[gpufleet: node " + run_as_.node_name +
        " has no NVIDIA driver for containers (simulated GPUs): no GPU devices are passed into "
        "the container; CUDA_VISIBLE_DEVICES still names its " +
        std::to_string(spec.gpu_indices.size()) + " GPU(s)]\n";
    (void)!write(log, note.data(), note.size());
  }
  const bool container = !spec.container.empty();
  // The job's environment: the shim sets it for the job (its PATH finds the job's program). A
  // container's goes into its env file; the shim then runs the runtime with the agent's own few.
  std::vector<std::string> env_strings;
  if (container) {
    env_strings = RuntimeEnvironment();  // the job's never reach the runtime's own environment
  } else {
    env_strings = Environment(spec, account);
  }
  // Without a working directory of its own, a job starts in its account's home (the log's folder
  // belongs to the agent and is not the job's to enter). The runtime starts in "/"; the container
  // in the job's directory, else the image's.
  const std::string workdir =
      container ? std::string("/") : spec.workdir.empty() ? account.home : spec.workdir;
  const uid_t uid = account.uid;
  const gid_t gid = account.gid;
  // The runtime runs as the agent (root); the container as the job's account.
  const bool switch_user = identity.value().switch_user && !container;
  // The account's groups, looked up here, where NSS is configured (the shim is static).
  std::vector<gid_t> groups;
  if (identity.value().switch_user) {
    int count = 32;
    groups.resize(static_cast<std::size_t>(count));
    while (getgrouplist(account.name.c_str(), gid, groups.data(), &count) < 0) {
      if (count <= static_cast<int>(groups.size()) || count > 65536) {
        count = 1;  // the primary group alone, rather than nothing
        groups.assign(1, gid);
        break;
      }
      groups.resize(static_cast<std::size_t>(count));
    }
    groups.resize(static_cast<std::size_t>(count));
    // Root's group among the account's groups counts as root's (as its primary group does in
    // ResolveRunAs).
    if (!run_as_.allow_root && std::find(groups.begin(), groups.end(), gid_t{0}) != groups.end()) {
      close(log);
      return core::Error{"job " + std::to_string(spec.job_id) + ": account '" + account.name +
                         "' is in root's group (gid 0) on node " + run_as_.node_name +
                         ", which it refuses unless its agent runs with --allow-root-jobs"};
    }
  }
  const std::string user_name = account.name;
  std::vector<std::string> argv = spec.argv;
  std::vector<std::string> cleanup;
  std::vector<std::string> mount_checks;
  if (container) {
    // The env file: private to the agent (the runtime reads it as root), made anew so that a
    // planted file or link is never written through.
    const std::string env_path = ContainerEnvFilePath(spec.log_path);
    std::filesystem::remove(env_path, ec);
    const int env_fd =
        open(env_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    const std::string text = ContainerEnvFile(ContainerEnvironment(spec, account));
    if (env_fd < 0 || write(env_fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      const int err = errno;
      if (env_fd >= 0) close(env_fd);
      close(log);
      return core::Error{"job " + std::to_string(spec.job_id) + ": cannot write its env file " +
                         env_path + ": " + std::strerror(err)};
    }
    close(env_fd);
    ContainerRun run;
    run.name = spec.container_name.empty() ? ContainerName(spec.job_id, 0) : spec.container_name;
    run.spec = spec.container;
    run.pull = spec.pull;
    run.uid = uid;
    run.gid = gid;
    run.workdir = spec.workdir;
    run.env_file = env_path;
    run.cgroup_parent = spec.container_cgroup_parent;
    run.cpu_milli = spec.cpu_milli;
    run.memory_mib = spec.memory_mib;
    run.gpu_indices = spec.gpu_indices;
    run.gpu_device_nodes = spec.gpu_device_nodes;
    run.argv = spec.argv;
    run.groups = groups;
    run.cidfile = ContainerIdFilePath(spec.log_path);
    std::filesystem::remove(run.cidfile, ec);  // podman refuses to overwrite one
    argv = ContainerRunArgv(run, container_host_);
    cleanup = ContainerRemoveArgv(run.name, run.cidfile, container_host_);
    for (const core::BindMount& m : spec.container.mounts) {
      mount_checks.push_back((m.read_only ? "ro:" : "rw:") + m.source);
    }
  }
  // Exec failures travel back over a close-on-exec pipe: an empty read means exec succeeded.
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0) {
    close(log);
    if (container) std::filesystem::remove(ContainerEnvFilePath(spec.log_path), ec);
    return core::Error{std::string("pipe: ") + std::strerror(errno)};
  }
  status_pipe[1] = AboveShimDescriptors(status_pipe[1]);
  if (status_pipe[1] < 0) {
    const int err = errno;
    close(log);
    close(status_pipe[0]);
    if (container) std::filesystem::remove(ContainerEnvFilePath(spec.log_path), ec);
    return core::Error{std::string("pipe: ") + std::strerror(err)};
  }
  const std::string exit_path = ExitFilePath(spec.log_path);
  std::filesystem::remove(exit_path, ec);
  const std::string fenced_path = FencedFilePath(spec.log_path);
  std::filesystem::remove(fenced_path, ec);

  // The job runs under the shim (agent/job_shim.h), started with posix_spawn: no fork of this
  // process (whose page tables, copied at each fork, and copy-on-write faults afterwards, cost
  // the server most of its CPU when jobs ran). The shim leads the job's process group, waits for
  // the job and writes its exit status to `<log>.exit`, so the agent can die and come back: the
  // job keeps running, and the new agent re-adopts it by pid and start time (see Adopt).
  ShimSpec shim;
  shim.job_id = spec.job_id;
  shim.exit_path = exit_path;
  shim.fenced_path = fenced_path;
  shim.lease_path = spec.lease_path;
  shim.cgroup_procs = spec.cgroup_procs;
  shim.workdir = workdir;
  shim.lease_grace_ms = static_cast<int64_t>(spec.lease_grace_s * 1000);
  shim.log_limit = spec.log_limit_bytes;
  shim.switch_user = switch_user;
  shim.uid = uid;
  shim.gid = gid;
  shim.groups = groups;
  shim.env = env_strings;
  shim.argv = argv;
  shim.cleanup = cleanup;
  shim.oom_watch_dir = container ? spec.oom_watch_dir : std::string();
  shim.mount_checks = mount_checks;
  if (!container && !run_as_.shared_dev_shm && PrivateShmUnavailable().empty()) {
    shim.private_shm_mib = spec.memory_mib;
  }
  std::vector<std::string> shim_args = ShimCommandLine(shim);
  // The job's environment goes on kShimEnvFd, in a memory file only root can open: never on the
  // shim's command line, which every local account can read.
  const int env_fd = AboveShimDescriptors(memfd_create("gpufleet-job-env", MFD_CLOEXEC));
  const std::string env_block = ShimEnvironmentBlock(shim.env);
  if (env_fd < 0 || !WriteAll(env_fd, env_block)) {
    const int err = errno;
    if (env_fd >= 0) close(env_fd);
    close(log);
    close(status_pipe[0]);
    close(status_pipe[1]);
    if (container) std::filesystem::remove(ContainerEnvFilePath(spec.log_path), ec);
    return core::Error{"job " + std::to_string(spec.job_id) +
                       ": cannot hand its environment to its shim: " + std::strerror(err)};
  }
  shim_args.insert(shim_args.begin(), shim_program);
  std::vector<char*> shim_argv;
  for (std::string& a : shim_args) shim_argv.push_back(a.data());
  shim_argv.push_back(nullptr);

  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&files, log, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&files, log, STDERR_FILENO);
  posix_spawn_file_actions_adddup2(&files, status_pipe[1], 3);  // dup2 clears close-on-exec
  posix_spawn_file_actions_adddup2(&files, env_fd, kShimEnvFd);
  // Nothing else of the agent's (its listening socket above all) may live on in the shim, or a
  // restarted agent could not bind again.
  posix_spawn_file_actions_addclosefrom_np(&files, kShimEnvFd + 1);
  posix_spawnattr_t attrs;
  posix_spawnattr_init(&attrs);
  // Its own session (and so its own process group, led by it): a job left in the agent's
  // session shared its controlling terminal, where it could type commands into the shell of
  // whoever started the agent (TIOCSTI), read what they type, or SIGCONT any process there.
  posix_spawnattr_setflags(&attrs,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  sigset_t stops;  // blocked until the shim ignores them (job_shim.h)
  sigemptyset(&stops);
  sigaddset(&stops, SIGTERM);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGHUP);
  posix_spawnattr_setsigmask(&attrs, &stops);
  sigset_t defaults;  // whatever this process ignores (SIGPIPE, say) is the default again
  sigfillset(&defaults);
  posix_spawnattr_setsigdefault(&attrs, &defaults);
  pid_t pid = -1;
  char* no_environment[] = {nullptr};  // see job_shim.h
  const int spawned =
      posix_spawn(&pid, shim_program.c_str(), &files, &attrs, shim_argv.data(), no_environment);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attrs);
  close(env_fd);
  if (spawned != 0) {
    close(log);
    close(status_pipe[0]);
    close(status_pipe[1]);
    if (container) std::filesystem::remove(ContainerEnvFilePath(spec.log_path), ec);
    return core::Error{"job " + std::to_string(spec.job_id) + ": cannot start its shim " +
                       shim_path_ + ": " + std::strerror(spawned)};
  }
  close(status_pipe[1]);
  close(log);
  int report[3] = {0, 0, 0};
  ssize_t n = 0;
  // The exec's outcome, waited for at most kExecWaitMs: an exec that hangs (argv[0] on a dead
  // NFS or FUSE mount the job's user controls, or a shim the user stopped with SIGSTOP after it
  // took their uid) must not hold the launcher, whose beats renew the node's lease. Past that
  // the job counts as started; if its exec fails later, the shim records exit 127.
  constexpr int kExecWaitMs = 1000;
  pollfd status_ready{status_pipe[0], POLLIN, 0};
  int polled;
  do {
    polled = poll(&status_ready, 1, kExecWaitMs);
  } while (polled < 0 && errno == EINTR);
  if (polled > 0) {
    do {
      n = read(status_pipe[0], report, sizeof report);
    } while (n < 0 && errno == EINTR);
  }
  close(status_pipe[0]);
  if (n > 0) {
    // The report may come from a process that already runs as the job's account (the job
    // before its exec, the mount check): its user can stop it, and the shim would wait on it
    // for ever, and this thread, which beats the node's lease, on the shim. The job never
    // started: its whole process group (the shim leads it) is killed first.
    kill(-pid, SIGKILL);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    // What the killed shim had mounted for the container (PinMounts) it can no longer release.
    if (container) ReleasePinnedMounts(exit_path);
    std::filesystem::remove(exit_path, ec);
    if (container) std::filesystem::remove(ContainerEnvFilePath(spec.log_path), ec);
    const std::size_t mount = static_cast<std::size_t>(report[2]);
    std::string what =
        report[0] == kShimChdir     ? "cannot enter the working directory " + workdir
        : report[0] == kShimSetUser ? "cannot switch to account " + user_name
        : report[0] == kShimCapabilities
            ? "cannot drop the agent's capabilities for account " + user_name
        : report[0] == kShimPrivateShm
            ? std::string("cannot give it an IPC namespace and a /dev/shm of its own")
        : report[0] == kShimKeyring ? "cannot give it a session keyring of its own (is account " +
                                          user_name + "'s key quota full? see /proc/key-users)"
        : report[0] == kShimCgroup
            ? "cannot join its cgroup (" + JoinedPaths(spec.cgroup_procs) + ")"
        : report[0] == kShimPipe    ? std::string("cannot make its output pipe")
        : report[0] == kShimFork    ? std::string("its shim cannot fork")
        : report[0] == kShimBadArgs ? "the shim " + shim_path_ + " does not match this agent"
        : report[0] == kShimMountCheck
            ? (mount < spec.container.mounts.size()
                   ? "mount source " + spec.container.mounts[mount].source +
                         " is not reachable by account " + user_name +
                         " without following a symbolic link" +
                         (spec.container.mounts[mount].read_only ? "" : " (read-write)")
                   : "cannot check its mount sources as account " + user_name)
        : report[0] == kShimMountPin
            ? (mount < spec.container.mounts.size()
                   ? "cannot mount source " + spec.container.mounts[mount].source +
                         " for the container runtime (the agent needs CAP_SYS_ADMIN in the "
                         "runtime's mount namespace)"
                   : std::string("cannot mount its sources for the container runtime"))
            : "cannot run '" + core::TruncateUtf8(argv[0], 256) + "'";
    return core::Error{"job " + std::to_string(spec.job_id) + ": " + what + ": " +
                       std::strerror(report[1])};
  }
  Child child;
  child.pid = pid;
  // A job as short as `true` may already have ended: the shim is then a zombie, still ours and
  // still identified by its start time (a 0 here made a re-adopted job look alive forever).
  child.start_ticks = ChildStartTicks(pid);
  child.exit_path = exit_path;
  child.own_child = true;
  child.pidfd = OpenPidFd(pid);  // our child, unreaped: the pid cannot name another process
  child.container_cleanup = cleanup;
  jobs_[spec.job_id] = child;
  return Launched{pid, child.start_ticks, CurrentBootId()};
}

bool Runner::Stop(int64_t job_id, double grace_s) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return false;
  Child& child = it->second;
  if (!child.stopping) {
    child.stopping = true;
    child.kill_at = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(std::max(0.0, grace_s)));
    if (MaySignal(child)) {
      kill(-child.pid, SIGTERM);
      // And a host job's processes that left the group (its shim keeps them below itself;
      // process_tree.h), once each. A container's runtime stops its own.
      if (child.container_cleanup.empty())
        SignalDescendants(child.pid, SIGTERM, child.pid, child.pidfd);
    }
  }
  return true;
}

void Runner::StartCleanup(Child& child) {
  child.cleanup_sent = true;
  const pid_t pid = SpawnQuietly(child.container_cleanup);
  if (pid > 0) helpers_.push_back(pid);
}

std::vector<JobExit> Runner::Reap() {
  std::vector<JobExit> exits;
  const auto now = std::chrono::steady_clock::now();
  for (auto h = helpers_.begin(); h != helpers_.end();) {
    h = waitpid(*h, nullptr, WNOHANG) == 0 ? std::next(h) : helpers_.erase(h);
  }
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    Child& child = it->second;
    bool ended = false;
    int status = 0;
    bool have_status = false;
    if (child.own_child) {
      // Seen to end without reaping it first: until it is reaped its pid, and so its process
      // group's id, cannot be given to another process, and the group kill below reaches this
      // job's leftovers only (after the reap, a pid wrap could give the id to another's group).
      siginfo_t info{};
      const int w = waitid(P_PID, static_cast<id_t>(child.pid), &info, WEXITED | WNOHANG | WNOWAIT);
      ended = (w == 0 && info.si_pid == child.pid) || (w < 0 && errno == ECHILD);
      if (ended && w == 0) {
        if (child.stopping) kill(-child.pid, SIGKILL);
        have_status = waitpid(child.pid, &status, 0) == child.pid;
      }
    } else {
      // Gone, or the pid reused; or it had ended before it was adopted.
      ended = child.ended || ProcessStartTicks(child.pid) != child.start_ticks;
    }
    if (ended) {
      JobExit e;
      e.job_id = it->first;
      e.stopped = child.stopping;
      const auto recorded = ReadExitFile(child.exit_path);
      if (recorded) {
        e.exit_code = recorded->code;
        e.signal = recorded->signal;
        e.oom_events = recorded->oom_events;
      }
      // A container job whose shim ended without its record did not remove its container.
      if (!recorded && !child.container_cleanup.empty()) StartCleanup(child);
      if (recorded) {
        // as recorded
      } else if (have_status && WIFSIGNALED(status)) {  // the shim itself was killed
        e.signal = WTERMSIG(status);
        e.exit_code = 128 + e.signal;
      } else if (have_status && WIFEXITED(status)) {
        e.exit_code = WEXITSTATUS(status);
      } else {
        e.signal = SIGKILL;  // ended unseen, with no record: it was killed
        e.exit_code = 128 + SIGKILL;
      }
      // Nothing of an adopted job's group may outlive it after a stop (our own child's group was
      // killed before its reap, above). The group id cannot be given to another process while
      // members are left; a pid that another process holds now means the group is empty, and
      // that process's group is not this job's. A job that ended before it was adopted is not
      // signalled.
      if (!child.own_child && child.stopping && !child.ended) {
        const uint64_t now_there = ChildStartTicks(child.pid);
        if (now_there == 0 || now_there == child.start_ticks) kill(-child.pid, SIGKILL);
      }
      exits.push_back(e);
      // A container job's env file (its variables) goes with it; a host job has none. So do
      // the mounts its shim made for the runtime, if the shim was killed before it removed them.
      std::error_code ec;
      const std::string& exit_path = child.exit_path;
      if (!child.container_cleanup.empty()) ReleasePinnedMounts(exit_path);
      if (exit_path.size() > 5) {
        std::filesystem::remove(exit_path.substr(0, exit_path.size() - 5) + ".env", ec);
      }
      if (child.pidfd >= 0) close(child.pidfd);
      it = jobs_.erase(it);
      continue;
    }
    if (child.stopping && now >= child.kill_at && MaySignal(child)) {
      if (!child.container_cleanup.empty() && !child.cleanup_sent) {
        // The container is killed and removed; its runtime returns and the shim records the end.
        StartCleanup(child);
        child.kill_at = now + kContainerKillWait;
      } else {
        // A host job's processes that left the group first: the shim dies with the group.
        if (child.container_cleanup.empty()) SignalDescendants(child.pid, SIGKILL, 0, child.pidfd);
        kill(-child.pid, SIGKILL);
      }
    }
    ++it;
  }
  return exits;
}

}  // namespace gpufleet::agent

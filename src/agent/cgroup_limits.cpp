#include "agent/cgroup_limits.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "agent/device_filter.h"
#include "agent/job_usage.h"
#include "agent/process_tree.h"
#include "agent/runner.h"

namespace gpufleet::agent {
namespace {

namespace fs = std::filesystem;
using core::UsageFigure;

constexpr int64_t kPeriodUs = 100000;
// The kernel refuses a CFS quota under 1 ms (EINVAL), and the job would then run unlimited.
constexpr int64_t kMinQuotaUs = 1000;

// The CPU quota per period for `cpu_milli` thousandths of a core, at least the kernel's least.
int64_t QuotaUs(int64_t cpu_milli) { return std::max(kMinQuotaUs, cpu_milli * kPeriodUs / 1000); }

// A small file (a cgroup or /proc file), whole, with plain system calls: a cgroup's usage is a
// dozen such reads, and a stream per read cost more than the kernel's side. "" when unreadable.
std::string ReadText(const fs::path& path) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0 && out.size() < (1 << 20)) {
    out.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

// Writes `text` to a cgroup control file in one write(2); false when the kernel refuses it.
bool WriteControl(const fs::path& path, const std::string& text) {
  // O_CREAT and O_TRUNC as an ofstream would: harmless on cgroupfs, and tests use plain files.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

bool HasWord(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  std::string w;
  while (in >> w) {
    if (w == word) return true;
  }
  return false;
}

// A non-negative decimal at the start of `text` (after blanks); -1 when there is none.
int64_t ParseCount(const char* text) {
  while (*text == ' ' || *text == '\t') ++text;
  if (*text < '0' || *text > '9') return -1;
  return std::strtoll(text, nullptr, 10);
}

// A whole file holding one number; -1 when absent or not a number.
int64_t ReadNumber(const fs::path& path) { return ParseCount(ReadText(path).c_str()); }

// A quarter of the kernel's pid_max (threads count as pids too), at least 1024.
int64_t PidsMaxPerJob() {
  const int64_t pid_max = ReadNumber("/proc/sys/kernel/pid_max");
  return std::max<int64_t>(1024, pid_max / 4);
}

// All of one agent's jobs together: three quarters of pid_max (at least one job's share), so that
// several jobs of one user cannot take every pid either, and the agent and the system keep some.
int64_t PidsMaxAllJobs() {
  const int64_t pid_max = ReadNumber("/proc/sys/kernel/pid_max");
  return std::max(PidsMaxPerJob(), pid_max / 4 * 3);
}

// MemTotal of /proc/meminfo in bytes; -1 when unreadable.
int64_t MemTotalBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = -1;
  while (in >> key) {
    if (key == "MemTotal:") {
      in >> kib;
      return kib > 0 ? kib * 1024 : -1;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return -1;
}

// Caps all of the agent's jobs' memory (JobsMemoryCapBytes) through `file` of the jobs cgroup.
// Best effort. Below what the jobs hold now (an agent restarted under load), v1 refuses it and
// keeps the old limit; v2 takes it and reclaims, or OOM-kills within the jobs cgroup.
void CapJobsMemory(const fs::path& file) {
  const int64_t total = MemTotalBytes();
  if (total > 0) WriteControl(file, std::to_string(CgroupLimits::JobsMemoryCapBytes(total)));
}

// The value after `key` in text of "key value" lines (cpu.stat, memory.events,
// memory.oom_control); -1 when absent.
int64_t KeyedValue(const std::string& text, const std::string& key) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    if (text.compare(at, key.size(), key) == 0 && at + key.size() < end &&
        text[at + key.size()] == ' ') {
      return ParseCount(text.c_str() + at + key.size() + 1);
    }
    at = end + 1;
  }
  return -1;
}

int64_t ReadKeyed(const fs::path& path, const std::string& key) {
  return KeyedValue(ReadText(path), key);
}

// `total=` of the "some" line of a PSI file (microseconds); -1 when absent.
int64_t ReadPressureSome(const fs::path& path) {
  const std::string text = ReadText(path);
  if (text.rfind("some ", 0) != 0) return -1;
  const std::size_t at = text.find("total=");
  const std::size_t end = text.find('\n');
  if (at == std::string::npos || (end != std::string::npos && at > end)) return -1;
  return ParseCount(text.c_str() + at + 6);
}

// One mounted hierarchy from /proc/self/mountinfo.
struct Mount {
  std::string root;   // the path within the hierarchy that is mounted
  std::string point;  // where
  std::string type;   // "cgroup" or "cgroup2"
  std::string options;
};

std::vector<Mount> CgroupMounts() {
  std::vector<Mount> out;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream after(line.substr(dash + 3));
    Mount m;
    std::string source;
    after >> m.type >> source >> m.options;
    if (m.type != "cgroup" && m.type != "cgroup2") continue;
    std::istringstream fields(line);
    std::string id, parent, devices;
    fields >> id >> parent >> devices >> m.root >> m.point;
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) out.push_back(part);
  return out;
}

// This process's cgroup paths from /proc/self/cgroup: "" (v2) or a v1 controller -> path.
std::map<std::string, std::string> OwnCgroups() {
  std::map<std::string, std::string> out;
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t a = line.find(':');
    const std::size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string path = line.substr(b + 1);
    const std::string controllers = line.substr(a + 1, b - a - 1);
    if (controllers.empty()) {
      out[""] = path;
    } else {
      for (const std::string& c : SplitCommas(controllers)) out[c] = path;
    }
  }
  return out;
}

// `mount`'s directory for the cgroup at `path` of its hierarchy.
fs::path DirIn(const Mount& mount, const std::string& path) {
  std::string rel = path;
  if (mount.root != "/" && rel.rfind(mount.root, 0) == 0) rel = rel.substr(mount.root.size());
  return fs::path(mount.point) / fs::path(rel).relative_path();
}

std::string JobName(int64_t id) { return "gpufleet-job-" + std::to_string(id); }

// The cgroups below `dir`, deepest first (a container runtime's, in a job's cgroup).
std::vector<std::string> ChildCgroups(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_directory(ec) || entry.is_symlink(ec)) continue;
    std::vector<std::string> below = ChildCgroups(entry.path().string());
    out.insert(out.end(), below.begin(), below.end());
    out.push_back(entry.path().string());
  }
  return out;
}

// SIGKILL to every process in the cgroup at `dir` and the cgroups below it: on v2 (Linux 5.14+)
// by the kernel, all at once, then (and elsewhere only) pid by pid.
void KillAllIn(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir + "/cgroup.kill", ec)) WriteControl(dir + "/cgroup.kill", "1");
  std::vector<std::string> dirs = ChildCgroups(dir);
  dirs.push_back(dir);
  for (const std::string& d : dirs) {
    const std::string procs = ReadText(d + "/cgroup.procs");
    for (const char* p = procs.c_str(); *p != '\0';) {
      char* end = nullptr;
      const long long pid = std::strtoll(p, &end, 10);
      if (end == p) break;
      if (pid > 0) kill(static_cast<pid_t>(pid), SIGKILL);
      p = end;
    }
  }
}

// rmdir of `dir` after the cgroups below it; false when one is still there.
bool RemoveCgroupTree(const std::string& dir) {
  for (const std::string& child : ChildCgroups(dir)) ::rmdir(child.c_str());
  return ::rmdir(dir.c_str()) == 0 || errno == ENOENT;
}

}  // namespace

std::string CgroupLimits::InstanceTag(const std::string& data_dir) {
  std::error_code ec;
  const std::string path = fs::weakly_canonical(data_dir, ec).string();
  uint64_t h = 1469598103934665603ULL;  // FNV-1a: stable across builds and machines
  for (unsigned char c : ec ? data_dir : path) h = (h ^ c) * 1099511628211ULL;
  char tag[9];
  std::snprintf(tag, sizeof tag, "%08llx", static_cast<unsigned long long>(h >> 32));
  return tag;
}

CgroupLimits CgroupLimits::Detect(const std::string& root, const std::string& instance) {
  const std::string jobs_name = instance.empty() ? "gpufleet-jobs" : "gpufleet-jobs-" + instance;
  CgroupLimits c;
  fs::path base;
  const std::vector<Mount> mounts = root.empty() ? CgroupMounts() : std::vector<Mount>{};
  const std::map<std::string, std::string> own =
      root.empty() ? OwnCgroups() : std::map<std::string, std::string>{};
  std::string v2_why;
  std::string mount_point;  // of the cgroup2 hierarchy (the root given, for tests)
  if (!root.empty()) {
    base = root;
    mount_point = root;
  } else {
    for (const Mount& m : mounts) {
      if (m.type == "cgroup2") {
        base = DirIn(m, own.count("") ? own.at("") : "/");
        mount_point = m.point;
        break;
      }
    }
    if (base.empty()) v2_why = "no cgroup v2 hierarchy is mounted";
  }
  if (!base.empty()) {
    const std::string controllers = ReadText(base / "cgroup.controllers");
    // Memory is required (limits, OOM kills); without the cpu controller (a container or VM that
    // delegates memory only) jobs get memory limits and are measured from their cgroup, CPU
    // included (cpu.stat's usage is there in every v2 cgroup), but --cpus is not enforced.
    c.v2_cpu_ = HasWord(controllers, "cpu");
    const std::string enable = c.v2_cpu_ ? "+cpu +memory" : "+memory";
    if (!HasWord(controllers, "memory")) {
      std::string offers = controllers.substr(0, 60);
      while (!offers.empty() && offers.back() == '\n') offers.pop_back();
      v2_why = "the cgroup v2 hierarchy at " + base.string() +
               " does not offer the memory controller (offers: " +
               (offers.empty() ? std::string("none") : offers) + ")";
    } else if (!WriteControl(base / "cgroup.subtree_control", enable)) {
      // Processes in `base` (this agent) block enabling controllers: move into a leaf first.
      const fs::path leaf = base / "gpufleet-agent";
      std::error_code ec;
      fs::create_directories(leaf, ec);
      if (ec || !WriteControl(leaf / "cgroup.procs", std::to_string(getpid())) ||
          !WriteControl(base / "cgroup.subtree_control", enable)) {
        v2_why = "cannot enable the " + std::string(c.v2_cpu_ ? "cpu and memory controllers" :
                                                                "memory controller") +
                 " under " + base.string() +
                 " (no permission, or other processes share that cgroup)";
      }
    }
    if (v2_why.empty()) {
      const fs::path jobs = base / jobs_name;
      std::error_code ec;
      fs::create_directories(jobs, ec);
      if (ec || !WriteControl(jobs / "cgroup.subtree_control", enable)) {
        v2_why = "cannot prepare " + jobs.string() + " for job cgroups";
      } else {
        c.version_ = CgroupVersion::kV2;
        c.why_.clear();
        if (!c.v2_cpu_) {
          c.why_ = "the cgroup v2 hierarchy at " + base.string() +
                   " does not offer the cpu controller: --cpus is not enforced";
        }
        c.jobs_dir_ = jobs.string();
        // Devices are confined by a BPF program per job (device_filter.h), where one loads: on
        // a real cgroup2 file system only (tests give plain directories).
        struct statfs on {};
        if (::statfs(jobs.c_str(), &on) == 0 && on.f_type == CGROUP2_SUPER_MAGIC) {
          c.devices_why_ = DeviceFilterUnusableAt(jobs.string(), mount_point);
          c.v2_devices_ = c.devices_why_.empty();
        }
        // Best effort: without the pids controller jobs only lose their process cap.
        if (HasWord(controllers, "pids") &&
            WriteControl(base / "cgroup.subtree_control", "+pids") &&
            WriteControl(jobs / "cgroup.subtree_control", "+pids")) {
          c.pids_max_ = PidsMaxPerJob();
          WriteControl(jobs / "pids.max", std::to_string(PidsMaxAllJobs()));
        }
        CapJobsMemory(jobs / "memory.max");
        if (root.empty()) {
          const std::string own_path = own.count("") ? own.at("") : "/";
          c.relative_jobs_ = (own_path == "/" ? "" : own_path) + "/" + jobs_name;
        }
        return c;
      }
    }
  }
  if (!root.empty()) {
    c.why_ = v2_why;
    return c;
  }
  // cgroup v1: in each hierarchy that carries a controller we use, the agent's cgroup path in the
  // memory hierarchy. One path for all, as a container runtime's --cgroup-parent is one path for
  // all: where the agent sits at different paths in different hierarchies, a container made below
  // a job's cgroup then lands in the job's cpu, freezer and devices cgroups too, not beside them.
  const std::string own_path = own.count("memory") ? own.at("memory") : "/";
  std::map<std::string, std::string> own_dirs;
  std::set<std::string> other_dirs;
  for (const Mount& m : mounts) {
    if (m.type != "cgroup") continue;
    for (const std::string& opt : SplitCommas(m.options)) {
      if (opt != "cpu" && opt != "cpuacct" && opt != "memory" && opt != "blkio" && opt != "pids" &&
          opt != "freezer" && opt != "devices") {
        continue;
      }
      own_dirs[opt] = DirIn(m, own_path).string();
      const std::string older = DirIn(m, own.count(opt) ? own.at(opt) : "/").string();
      if (older != own_dirs[opt]) other_dirs.insert((fs::path(older) / jobs_name).string());
    }
  }
  CgroupLimits v1 = DetectV1(own_dirs, instance);
  v1.v1_other_jobs_.assign(other_dirs.begin(), other_dirs.end());
  if (!v1.available()) v1.why_ = v2_why + "; " + v1.why_;
  if (v1.available()) {
    v1.relative_jobs_ = (own_path == "/" ? "" : own_path) + "/" +
                        (instance.empty() ? "gpufleet-jobs" : "gpufleet-jobs-" + instance);
  }
  return v1;
}

CgroupLimits CgroupLimits::DetectV1(const std::map<std::string, std::string>& own_dirs,
                                    const std::string& instance) {
  CgroupLimits c;
  const std::string jobs_name = instance.empty() ? "gpufleet-jobs" : "gpufleet-jobs-" + instance;
  if (own_dirs.count("cpu") == 0 || own_dirs.count("memory") == 0) {
    c.why_ = "no cgroup v1 hierarchy with the cpu and memory controllers is mounted";
    return c;
  }
  for (const auto& [controller, dir] : own_dirs) {
    const fs::path jobs = fs::path(dir) / jobs_name;
    std::error_code ec;
    fs::create_directories(jobs, ec);
    if (ec) {
      if (controller == "cpu" || controller == "memory") {
        c.why_ = "cannot create " + jobs.string() + " (cgroup v1): " + ec.message();
        c.v1_jobs_.clear();
        return c;
      }
      // cpuacct, blkio, pids, freezer or devices: unmeasured, unlimited, killed pid by pid, or
      // not kept off other jobs' GPUs
      continue;
    }
    c.v1_jobs_[controller] = jobs.string();
  }
  if (c.v1_jobs_.count("blkio") > 0) {
    // The disks (MAJ:MIN of each block device with a size), read once: listing them at every
    // launch cost more than the rest of preparing a job's cgroups.
    std::error_code ec;
    for (const auto& disk : fs::directory_iterator("/sys/block", ec)) {
      std::string dev = ReadText(disk.path() / "dev");
      while (!dev.empty() && dev.back() == '\n') dev.pop_back();
      if (!dev.empty() && ReadNumber(disk.path() / "size") > 0) c.v1_disks_.push_back(dev);
    }
  }
  c.version_ = CgroupVersion::kV1;
  c.why_.clear();
  // (Kernels before 5.x let a v1 cgroup's children escape its limit unless use_hierarchy is 1;
  // later ones force it.)
  WriteControl(fs::path(c.v1_jobs_.at("memory")) / "memory.use_hierarchy", "1");
  CapJobsMemory(fs::path(c.v1_jobs_.at("memory")) / "memory.limit_in_bytes");
  if (c.v1_jobs_.count("pids") > 0) {
    c.pids_max_ = PidsMaxPerJob();
    WriteControl(fs::path(c.v1_jobs_.at("pids")) / "pids.max", std::to_string(PidsMaxAllJobs()));
  }
  return c;
}

int64_t CgroupLimits::JobsMemoryCapBytes(int64_t mem_total_bytes) {
  const int64_t reserve =
      std::clamp<int64_t>(mem_total_bytes / 20, int64_t{512} << 20, int64_t{8} << 30);
  return std::max<int64_t>(mem_total_bytes - reserve, mem_total_bytes / 2);
}

std::string_view CgroupLimits::Kind() const {
  switch (version_) {
    case CgroupVersion::kV2:
      return v2_cpu_ ? "cgroup-v2" : "cgroup-v2-memory";
    case CgroupVersion::kV1:
      return "cgroup-v1";
    case CgroupVersion::kNone:
      break;
  }
  return "none";
}

std::vector<std::string> CgroupLimits::JobDirs(int64_t id) const {
  std::vector<std::string> out;
  if (version_ == CgroupVersion::kV2) {
    out.push_back((fs::path(jobs_dir_) / JobName(id)).string());
  } else if (version_ == CgroupVersion::kV1) {
    std::set<std::string> seen;  // controllers sharing a hierarchy share the directory
    for (const auto& [controller, jobs] : v1_jobs_) {
      if (seen.insert(jobs).second) out.push_back((fs::path(jobs) / JobName(id)).string());
    }
  }
  return out;
}

std::vector<int64_t> CgroupLimits::JobIds() const {
  std::set<int64_t> ids;
  std::set<std::string> dirs;
  if (version_ == CgroupVersion::kV2) dirs.insert(jobs_dir_);
  for (const auto& [controller, jobs] : v1_jobs_) dirs.insert(jobs);
  for (const std::string& dir : dirs) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("gpufleet-job-", 0) != 0) continue;
      char* end = nullptr;
      const long long id = std::strtoll(name.c_str() + 13, &end, 10);
      if (id > 0 && *end == '\0') ids.insert(id);
    }
  }
  return {ids.begin(), ids.end()};
}

std::string DeviceRule(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) return "";
  return "c " + std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev));
}

core::Result<std::vector<std::string>> CgroupLimits::Prepare(
    int64_t id, const JobLimits& limits, bool runtime_leaf,
    const std::vector<std::string>& denied_devices) const {
  if (!available()) return core::Error{"cgroups are unavailable: " + why_};
  unremoved_.erase(id);  // launched again (requeued): no longer to be killed and removed
  std::vector<std::string> procs;
  for (const std::string& dir : JobDirs(id)) {
    if (::mkdir(dir.c_str(), 0755) != 0) {
      if (errno != EEXIST) {
        return core::Error{"cannot create " + dir + ": " + std::strerror(errno)};
      }
      // Left from before: its counts would add to this run's. Empty it and make it anew (a
      // cgroup whose processes will not go is used as it is). A freezer cgroup an agent that
      // died mid-release left frozen is thawed first: its processes die, and the new job would
      // otherwise start frozen.
      std::error_code ec;
      if (fs::exists(dir + "/freezer.state", ec)) WriteControl(dir + "/freezer.state", "THAWED");
      for (int tries = 0; tries < 50 && !RemoveCgroupTree(dir); ++tries) {
        KillAllIn(dir);
        usleep(2000);
      }
      if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        return core::Error{"cannot create " + dir + ": " + std::strerror(errno)};
      }
    }
    procs.push_back(dir + "/cgroup.procs");
  }
  // Each write, with the file it goes to: every limit is written, "none" included, so that a
  // cgroup left from before (an id used again after a store reset) holds no stale limit.
  std::vector<std::pair<fs::path, std::string>> writes;
  const int64_t bytes = limits.memory_mib * 1024 * 1024;
  if (version_ == CgroupVersion::kV2) {
    const fs::path dir = JobDirs(id).front();
    if (v2_cpu_) {
      writes.emplace_back(dir / "cpu.max", limits.cpu_milli > 0
                                               ? std::to_string(QuotaUs(limits.cpu_milli)) + " " +
                                                     std::to_string(kPeriodUs)
                                               : "max " + std::to_string(kPeriodUs));
    }
    writes.emplace_back(dir / "memory.max",
                        limits.memory_mib > 0 ? std::to_string(bytes) : std::string("max"));
    // No swap beyond the limit (v1 sets memory+swap to it): a limited job would otherwise push
    // the rest into swap and slow the whole node. Where swap is accounted.
    if (fs::exists(fs::path(jobs_dir_) / "memory.swap.max")) {
      writes.emplace_back(dir / "memory.swap.max",
                          limits.memory_mib > 0 ? std::string("0") : std::string("max"));
    }
    if (pids_max_ > 0) writes.emplace_back(dir / "pids.max", std::to_string(pids_max_));
  } else {
    const fs::path cpu = fs::path(v1_jobs_.at("cpu")) / JobName(id);
    const fs::path memory = fs::path(v1_jobs_.at("memory")) / JobName(id);
    writes.emplace_back(cpu / "cpu.cfs_period_us", std::to_string(kPeriodUs));
    writes.emplace_back(cpu / "cpu.cfs_quota_us", limits.cpu_milli > 0
                                                      ? std::to_string(QuotaUs(limits.cpu_milli))
                                                      : std::string("-1"));
    // memory+swap must stay at or above memory: lift it first, then set both.
    const bool swap_accounted = fs::exists(memory / "memory.memsw.limit_in_bytes");
    if (swap_accounted) writes.emplace_back(memory / "memory.memsw.limit_in_bytes", "-1");
    const std::string memory_limit = limits.memory_mib > 0 ? std::to_string(bytes) : "-1";
    writes.emplace_back(memory / "memory.limit_in_bytes", memory_limit);
    if (swap_accounted && limits.memory_mib > 0) {
      writes.emplace_back(memory / "memory.memsw.limit_in_bytes", memory_limit);
    }
    if (auto it = v1_jobs_.find("pids"); it != v1_jobs_.end() && pids_max_ > 0) {
      writes.emplace_back(fs::path(it->second) / JobName(id) / "pids.max",
                          std::to_string(pids_max_));
    }
    // Recent kernels count v1 blkio only on devices with a throttle rule: a rule no job can reach
    // (2^63-1 bytes/s) on each disk makes its reads and direct writes counted. Best effort: a
    // device that takes no rule is only not measured.
    if (auto it = v1_jobs_.find("blkio"); it != v1_jobs_.end()) {
      const fs::path blkio = fs::path(it->second) / JobName(id);
      for (const std::string& dev : v1_disks_) {
        WriteControl(blkio / "blkio.throttle.read_bps_device", dev + " 9223372036854775807");
        WriteControl(blkio / "blkio.throttle.write_bps_device", dev + " 9223372036854775807");
      }
    }
  }
  for (const auto& [file, text] : writes) {
    if (!WriteControl(file, text)) return core::Error{"cannot write " + file.string()};
  }
  if (auto it = v1_jobs_.find("devices"); it != v1_jobs_.end() && version_ == CgroupVersion::kV1) {
    // One rule per write, as the kernel takes them; appended (tests use plain files). A rule the
    // kernel refuses fails the launch: the job must not start with GPUs it was not given.
    const fs::path deny = fs::path(it->second) / JobName(id) / "devices.deny";
    for (const std::string& rule : denied_devices) {
      const std::string text = rule + " rwm";
      const int fd = ::open(deny.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
      const bool ok =
          fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      if (fd >= 0) ::close(fd);
      if (!ok) return core::Error{"cannot write " + deny.string() + " (" + text + ")"};
    }
  }
  if (!denied_devices.empty() && version_ == CgroupVersion::kV2 && v2_devices_) {
    // A program that cannot be attached fails the launch, as a v1 rule the kernel refuses does.
    auto attached = AttachDeviceDenyList(JobDirs(id).front(), denied_devices);
    if (!attached) return attached.failure();
  }
  if (runtime_leaf && version_ == CgroupVersion::kV2) {
    const fs::path leaf = fs::path(JobDirs(id).front()) / "runtime";
    if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) {
      return core::Error{"cannot create " + leaf.string() + ": " + std::strerror(errno)};
    }
    procs = {(leaf / "cgroup.procs").string()};
  }
  return procs;
}

std::vector<std::string> CgroupLimits::ForLaunch(
    int64_t id, const JobLimits& limits, const char* who, bool runtime_leaf,
    const std::vector<std::string>& denied_devices) const {
  if (!available() && !said_tree_ && !ChildrenListed()) {
    std::fprintf(stderr,
                 "%s: a job's processes that leave its process group are not found: this kernel "
                 "has no /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN)\n",
                 who);
    said_tree_ = true;
  }
  if (!available()) {
    if (limits.any() && !said_) {
      std::fprintf(stderr, "%s: jobs run without CPU and memory limits: %s\n", who, why_.c_str());
      said_ = true;
    }
    return {};
  }
  auto prepared = Prepare(id, limits, runtime_leaf, denied_devices);
  if (prepared && limits.cpu_milli > 0 && !CpuLimited() && !said_cpu_) {
    std::fprintf(stderr, "%s: jobs run without CPU limits (memory limits hold): %s\n", who,
                 why_.c_str());
    said_cpu_ = true;
  }
  if (prepared) {
    launched_without_.erase(id);
    return prepared.value();
  }
  // Launched without: what Prepare made before it failed goes (empty: nothing joined it), and
  // Release kills the job's process group instead, as on a node without cgroups.
  for (const std::string& dir : JobDirs(id)) RemoveCgroupTree(dir);
  launched_without_.insert(id);
  if (!said_) {
    std::fprintf(stderr, "%s: jobs run without their cgroup (no limits, usage from /proc): %s\n",
                 who, prepared.error().c_str());
    said_ = true;
  }
  return {};
}

void CgroupLimits::Release(int64_t id, pid_t pgid, uint64_t pgid_start) {
  // Without a cgroup of its own (none on this node, or the job's could not be made and it was
  // launched without), the process group: killed only while it has members, and only while no
  // other process holds its id. The kernel gives a pid to no new process while a group of that
  // id has members, so a process there now with another start time (a pid wrap since the job
  // ended) means the job's group is empty, and the group there is another's (another job's
  // shim, a login) that must not be killed.
  const auto kill_group = [&] {
    if (pgid <= 0 || ProcessGroupMembers(pgid).empty()) return;
    const uint64_t now_there = ChildStartTicks(pgid);
    if (now_there == 0 || pgid_start == 0 || now_there == pgid_start) kill(-pgid, SIGKILL);
  };
  if (!available()) {
    kill_group();
    return;
  }
  bool has_cgroup = false;
  for (const std::string& dir : JobDirs(id)) {
    std::error_code ec;
    has_cgroup = has_cgroup || fs::is_directory(dir, ec);
  }
  // (After an agent restart only the directories tell: ForLaunch removed what it could.)
  if (launched_without_.erase(id) > 0 || !has_cgroup) kill_group();
  unremoved_.insert(id);
  ReleasePending();
}

std::string CgroupLimits::FreezeJob(int64_t id) const {
  const auto freezer = v1_jobs_.find("freezer");
  if (version_ != CgroupVersion::kV1 || freezer == v1_jobs_.end()) return "";
  const fs::path dir = fs::path(freezer->second) / JobName(id);
  const fs::path state = dir / "freezer.state";
  std::error_code ec;
  // Nothing left in it (the usual end of a job): nothing to freeze, nothing to wait for.
  if (!fs::exists(state, ec) || ReadText(dir / "cgroup.procs").empty() ||
      !WriteControl(state, "FROZEN")) {
    return "";
  }
  // FREEZING until every process stopped. One in uninterruptible sleep (a hung driver or file
  // system) holds it there: the kill then goes on without waiting longer, as it would without a
  // freezer, and later passes for the same job do not wait again (the agent's beat must not
  // stall on it).
  if (freeze_waited_.insert(id).second) {
    for (int i = 0; i < 100 && ReadText(state).rfind("FROZEN", 0) != 0; ++i) usleep(1000);
  }
  return state.string();
}

void CgroupLimits::TidyOtherPaths() const {
  // A jobs cgroup once gone is not looked at again (this runs at every ReleasePending).
  std::erase_if(v1_other_jobs_, [](const std::string& jobs) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(jobs, ec)) {
      if (entry.path().filename().string().rfind("gpufleet-job-", 0) != 0) continue;
      const std::string dir = entry.path().string();
      if (fs::exists(dir + "/freezer.state", ec)) WriteControl(dir + "/freezer.state", "THAWED");
      RemoveCgroupTree(dir);  // only once nothing runs there
    }
    return ::rmdir(jobs.c_str()) == 0 || errno == ENOENT;
  });
}

void CgroupLimits::ReleasePending() {
  TidyOtherPaths();
  for (auto it = unremoved_.begin(); it != unremoved_.end();) {
    const std::vector<std::string> dirs = JobDirs(*it);
    const std::string frozen = FreezeJob(*it);
    for (const std::string& dir : dirs) KillAllIn(dir);
    // Killed while frozen, they die once thawed; never left frozen.
    if (!frozen.empty()) WriteControl(frozen, "THAWED");
    bool gone = true;
    for (const std::string& dir : dirs) {
      // rmdir, not a recursive remove: a cgroup directory goes only once its processes have.
      if (!RemoveCgroupTree(dir)) gone = false;
    }
    if (gone) freeze_waited_.erase(*it);
    it = gone ? unremoved_.erase(it) : std::next(it);
  }
}

void CgroupLimits::RemoveJobsCgroupIfEmpty() const {
  std::set<std::string> dirs;
  if (version_ == CgroupVersion::kV2) dirs.insert(jobs_dir_);
  for (const auto& [controller, jobs] : v1_jobs_) dirs.insert(jobs);
  for (const std::string& dir : dirs) {
    std::error_code ec;
    fs::remove(dir, ec);  // rmdir: refused while a job cgroup is in it
  }
}

core::HostUsage CgroupLimits::ReadUsage(int64_t id) const {
  core::HostUsage u;
  if (version_ == CgroupVersion::kV2) {
    const fs::path dir = JobDirs(id).front();
    if (!fs::exists(dir / "cgroup.procs")) return u;
    u.source = core::UsageSource::kCgroupV2;
    const std::string cpu_stat = ReadText(dir / "cpu.stat");
    u.set(UsageFigure::kCpuUsageUs, KeyedValue(cpu_stat, "usage_usec"));
    u.set(UsageFigure::kCpuThrottledPeriods, KeyedValue(cpu_stat, "nr_throttled"));
    u.set(UsageFigure::kCpuThrottledUs, KeyedValue(cpu_stat, "throttled_usec"));
    u.set(UsageFigure::kMemoryCurrentBytes, ReadNumber(dir / "memory.current"));
    u.set(UsageFigure::kMemoryPeakBytes, ReadNumber(dir / "memory.peak"));  // kernel 5.19+
    u.set(UsageFigure::kOomKills, ReadKeyed(dir / "memory.events", "oom_kill"));
    // io.stat: one line per device, "MAJ:MIN rbytes=N wbytes=N rios=N ...".
    std::istringstream io(ReadText(dir / "io.stat"));
    if (fs::exists(dir / "io.stat")) {
      int64_t read = 0, write = 0;
      std::string word;
      while (io >> word) {
        if (word.rfind("rbytes=", 0) == 0) read += std::strtoll(word.c_str() + 7, nullptr, 10);
        if (word.rfind("wbytes=", 0) == 0) write += std::strtoll(word.c_str() + 7, nullptr, 10);
      }
      u.set(UsageFigure::kIoReadBytes, read);
      u.set(UsageFigure::kIoWriteBytes, write);
    }
    u.set(UsageFigure::kCpuPressureSomeUs, ReadPressureSome(dir / "cpu.pressure"));
    u.set(UsageFigure::kIoPressureSomeUs, ReadPressureSome(dir / "io.pressure"));
    u.set(UsageFigure::kMemoryPressureSomeUs, ReadPressureSome(dir / "memory.pressure"));
    return u;
  }
  if (version_ != CgroupVersion::kV1) return u;
  const auto dir_of = [&](const std::string& controller) -> fs::path {
    auto it = v1_jobs_.find(controller);
    return it == v1_jobs_.end() ? fs::path() : fs::path(it->second) / JobName(id);
  };
  const fs::path cpu = dir_of("cpu"), memory = dir_of("memory");
  if (!fs::exists(memory / "cgroup.procs")) return u;
  u.source = core::UsageSource::kCgroupV1;
  const auto micro = [](int64_t nanos) { return nanos < 0 ? -1 : nanos / 1000; };
  if (const fs::path acct = dir_of("cpuacct"); !acct.empty()) {
    u.set(UsageFigure::kCpuUsageUs, micro(ReadNumber(acct / "cpuacct.usage")));
  }
  const std::string cpu_stat = ReadText(cpu / "cpu.stat");
  u.set(UsageFigure::kCpuThrottledPeriods, KeyedValue(cpu_stat, "nr_throttled"));
  u.set(UsageFigure::kCpuThrottledUs, micro(KeyedValue(cpu_stat, "throttled_time")));
  u.set(UsageFigure::kMemoryCurrentBytes, ReadNumber(memory / "memory.usage_in_bytes"));
  u.set(UsageFigure::kMemoryPeakBytes, ReadNumber(memory / "memory.max_usage_in_bytes"));
  u.set(UsageFigure::kOomKills, ReadKeyed(memory / "memory.oom_control", "oom_kill"));
  // blkio.throttle.io_service_bytes: "MAJ:MIN Read N", "... Write N", ..., and a "Total N" line.
  if (const fs::path blkio = dir_of("blkio"); !blkio.empty()) {
    const std::string text = ReadText(blkio / "blkio.throttle.io_service_bytes");
    std::istringstream io(text);
    if (!text.empty()) {
      int64_t read = 0, write = 0;
      std::string line;
      while (std::getline(io, line)) {
        std::istringstream fields(line);
        std::string device, op;
        long long n = 0;
        if (!(fields >> device >> op >> n)) continue;
        if (op == "Read") read += n;
        if (op == "Write") write += n;
      }
      u.set(UsageFigure::kIoReadBytes, read);
      u.set(UsageFigure::kIoWriteBytes, write);
    }
  }
  return u;  // v1 has no per-cgroup PSI
}

std::vector<pid_t> CgroupLimits::Processes(int64_t id) const {
  std::vector<pid_t> out;
  const std::vector<std::string> dirs = JobDirs(id);
  if (dirs.empty()) return out;
  // v1: the memory hierarchy's copy (every job cgroup holds the same processes).
  fs::path dir = dirs.front();
  if (version_ == CgroupVersion::kV1) dir = fs::path(v1_jobs_.at("memory")) / JobName(id);
  std::vector<std::string> tree = ChildCgroups(dir.string());
  tree.push_back(dir.string());
  for (const std::string& d : tree) {
    std::ifstream in(d + "/cgroup.procs");
    long long pid = 0;
    while (in >> pid) out.push_back(static_cast<pid_t>(pid));
  }
  return out;
}

std::string CgroupLimits::ContainerParent(int64_t id) const {
  if (!available() || relative_jobs_.empty()) return "";
  return relative_jobs_ + "/" + JobName(id);
}

std::string CgroupLimits::OomWatchDir(int64_t id) const {
  if (version_ != CgroupVersion::kV1) return "";
  auto it = v1_jobs_.find("memory");
  return it == v1_jobs_.end() ? "" : (fs::path(it->second) / JobName(id)).string();
}

}  // namespace gpufleet::agent

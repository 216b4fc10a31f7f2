#include "agent/job_usage.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "agent/process_tree.h"
#include "core/proc_stat.h"

namespace gpufleet::agent {
namespace {

using core::UsageFigure;

// The fields of /proc/PID/stat after the command name (core/proc_stat.h): index 0 is field 3.
bool ReadStatFields(pid_t pid, std::vector<std::string>& fields) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();  // whole: the name may hold a newline
  fields = core::StatFieldsAfterName(text.str());
  return fields.size() >= 22;  // up to rss (field 24)
}

int64_t Field(const std::vector<std::string>& fields, int number) {
  return std::strtoll(fields[static_cast<std::size_t>(number - 3)].c_str(), nullptr, 10);
}

}  // namespace

std::vector<pid_t> ProcessGroupMembers(pid_t pgid) {
  std::vector<pid_t> out;
  if (pgid <= 0) return out;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  std::vector<std::string> fields;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    if (ReadStatFields(static_cast<pid_t>(pid), fields) && Field(fields, 5) == pgid) {
      out.push_back(static_cast<pid_t>(pid));
    }
  }
  closedir(proc);
  return out;
}

core::HostUsage JobUsageMeter::Sample(int64_t id, pid_t leader, bool below_leader) {
  Track& t = jobs_[id];
  core::HostUsage u = cgroups_->ReadUsage(id);
  const bool from_cgroup = u.measured();
  std::vector<pid_t> pids = from_cgroup ? cgroups_->Processes(id) : ProcessGroupMembers(leader);
  if (!from_cgroup && below_leader) {
    // And what left the group below its shim (process_tree.h); each process once.
    std::vector<pid_t> below = DescendantsOf(leader);
    pids.insert(pids.end(), below.begin(), below.end());
    std::sort(pids.begin(), pids.end());
    pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  }
  static const int64_t kPage = sysconf(_SC_PAGESIZE);
  std::map<pid_t, PerProcess> now;
  std::vector<std::string> fields;
  bool blocked = false;
  bool read_any = false;
  for (pid_t pid : pids) {
    if (!ReadStatFields(pid, fields)) continue;  // gone since listed
    read_any = true;
    if (fields[0] == "D") blocked = true;
    PerProcess p;
    p.start_ticks = static_cast<uint64_t>(Field(fields, 22));
    p.cpu_ticks = Field(fields, 14) + Field(fields, 15);
    p.rss_bytes = Field(fields, 24) * kPage;
    const std::string dir = "/proc/" + std::to_string(pid);
    std::ifstream sched(dir + "/schedstat");
    long long run = 0, wait = 0;
    if (sched >> run >> wait) {
      p.wait_ns = wait;
      t.saw_schedstat = true;
    }
    std::ifstream io(dir + "/io");
    std::string key;
    long long value = 0;
    while (io >> key >> value) {
      if (key == "read_bytes:") p.read_bytes = value;
      if (key == "write_bytes:") {
        p.write_bytes = value;
        t.saw_io = true;
      }
    }
    now[pid] = p;
  }
  // Processes gone (or whose pid now names another process) keep what they used.
  for (const auto& [pid, p] : t.live) {
    auto it = now.find(pid);
    if (it != now.end() && it->second.start_ticks == p.start_ticks) continue;
    t.retired.cpu_ticks += p.cpu_ticks;
    t.retired.wait_ns += p.wait_ns;
    t.retired.read_bytes += p.read_bytes;
    t.retired.write_bytes += p.write_bytes;
  }
  t.live = std::move(now);
  PerProcess sum = t.retired;
  int64_t rss = 0;
  for (const auto& [pid, p] : t.live) {
    sum.cpu_ticks += p.cpu_ticks;
    sum.wait_ns += p.wait_ns;
    sum.read_bytes += p.read_bytes;
    sum.write_bytes += p.write_bytes;
    rss += p.rss_bytes;
  }
  if (t.saw_schedstat) u.set(UsageFigure::kCpuWaitUs, sum.wait_ns / 1000);
  // I/O stall, estimated: a sample that finds a process in D state counts the time since the
  // previous sample as blocked (at 1 Hz, the share over a minute is within a few percent).
  const int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::steady_clock::now().time_since_epoch())
                             .count();
  if (read_any || t.blocked_us > 0) {
    if (blocked && t.sampled_us > 0) t.blocked_us += now_us - t.sampled_us;
    u.set(UsageFigure::kIoBlockedUs, t.blocked_us);
  }
  t.sampled_us = now_us;
  if (u.source == core::UsageSource::kCgroupV1 && t.saw_io) {
    // Recent kernels keep v1's blkio.throttle counters only for devices with a throttle rule:
    // the job's processes' own storage I/O counts too (the larger of the two).
    u.set(UsageFigure::kIoReadBytes, std::max(u.get(UsageFigure::kIoReadBytes), sum.read_bytes));
    u.set(UsageFigure::kIoWriteBytes,
          std::max(u.get(UsageFigure::kIoWriteBytes), sum.write_bytes));
  }
  if (!from_cgroup && (leader > 0 || t.last.measured())) {
    static const int64_t kTicks = sysconf(_SC_CLK_TCK);
    u.source = core::UsageSource::kProc;
    u.set(UsageFigure::kCpuUsageUs, sum.cpu_ticks * 1000000 / std::max<int64_t>(1, kTicks));
    t.peak_rss_bytes = std::max(t.peak_rss_bytes, rss);
    u.set(UsageFigure::kMemoryCurrentBytes, rss);
    u.set(UsageFigure::kMemoryPeakBytes, t.peak_rss_bytes);
    if (t.saw_io) {
      u.set(UsageFigure::kIoReadBytes, sum.read_bytes);
      u.set(UsageFigure::kIoWriteBytes, sum.write_bytes);
    }
  }
  t.last = u;
  return u;
}

core::HostUsage JobUsageMeter::Last(int64_t id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? core::HostUsage{} : it->second.last;
}

}  // namespace gpufleet::agent

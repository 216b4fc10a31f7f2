#include "gpu/process_info.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include "core/proc_stat.h"

namespace gpufleet::gpu {
namespace {

constexpr std::size_t kMaxCommandChars = 200;
constexpr std::size_t kMaxJobIdChars = 128;

std::string ReadSmallFile(const std::string& path, std::size_t at_most = std::size_t{1} << 20) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string text;
  char buffer[4096];
  // Bounded: environments and command lines can be large, and we need only their start.
  while (text.size() < at_most && in.read(buffer, sizeof buffer).gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
  }
  return text;
}

bool IsJobIdChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
         c == '_';
}

// The id that follows `marker` in `text`, up to the first character that cannot be in an id (so
// a systemd unit suffix such as ".scope" is left out).
std::string IdAfter(std::string_view text, std::string_view marker) {
  const std::size_t at = text.find(marker);
  if (at == std::string_view::npos) return {};
  std::size_t end = at + marker.size();
  while (end < text.size() && IsJobIdChar(text[end]) && end - at - marker.size() < kMaxJobIdChars) {
    ++end;
  }
  return std::string(text.substr(at + marker.size(), end - at - marker.size()));
}

// The parent pid in a /proc/<pid>/stat text (its fourth field), or 0.
long ParentInStat(const std::string& stat) {
  const std::vector<std::string> fields = core::StatFieldsAfterName(stat);
  return fields.size() >= 2 ? std::strtol(fields[1].c_str(), nullptr, 10) : 0;
}

}  // namespace

std::string JobIdFromCgroup(std::string_view cgroup_text) {
  std::string id = IdAfter(cgroup_text, "gpufleet-job-");
  if (id.empty()) id = IdAfter(cgroup_text, "gpufleet/job-");
  return id;
}

std::string JobIdFromEnviron(std::string_view environ_block) {
  constexpr std::string_view kKey = "GPUFLEET_JOB_ID=";
  std::size_t start = 0;
  while (start < environ_block.size()) {
    std::size_t end = environ_block.find('\0', start);
    if (end == std::string_view::npos) end = environ_block.size();
    const std::string_view entry = environ_block.substr(start, end - start);
    if (entry.substr(0, kKey.size()) == kKey) {
      // Any process can set this variable: keep only an id's characters, and a bounded number,
      // since it becomes a metric label.
      std::string id;
      for (char c : entry.substr(kKey.size())) {
        if (!IsJobIdChar(c) || id.size() >= kMaxJobIdChars) break;
        id += c;
      }
      return id;
    }
    start = end + 1;
  }
  return {};
}

ProcessInspector::ProcessInspector(std::string proc_root, double cache_seconds)
    : proc_root_(std::move(proc_root)), cache_seconds_(cache_seconds) {}

const ProcessOwner& ProcessInspector::Lookup(std::uint32_t pid, double now_s) {
  // Forget exited processes now and then, so the cache does not grow with every pid ever seen.
  if (now_s - last_sweep_s_ > cache_seconds_) {
    for (auto it = cache_.begin(); it != cache_.end();) {
      it = now_s - it->second.read_at_s > cache_seconds_ ? cache_.erase(it) : std::next(it);
    }
    last_sweep_s_ = now_s;
  }
  auto it = cache_.find(pid);
  if (it == cache_.end() || now_s - it->second.read_at_s > cache_seconds_) {
    Entry entry{Read(pid), now_s};
    it = cache_.insert_or_assign(pid, std::move(entry)).first;
  }
  return it->second.owner;
}

ProcessOwner ProcessInspector::Read(std::uint32_t pid) const {
  ProcessOwner owner;
  const std::string dir = proc_root_ + "/" + std::to_string(pid);
  const std::string status = ReadSmallFile(dir + "/status");
  if (const std::size_t at = status.find("\nUid:"); at != std::string::npos) {
    owner.uid = std::strtoll(status.c_str() + at + 5, nullptr, 10);
    owner.user = UserName(owner.uid);
  }
  std::string cmdline = ReadSmallFile(dir + "/cmdline");
  while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
  for (char& c : cmdline) {
    if (c == '\0') c = ' ';
  }
  if (cmdline.empty()) {
    cmdline = ReadSmallFile(dir + "/comm");
    while (!cmdline.empty() && cmdline.back() == '\n') cmdline.pop_back();
  }
  if (cmdline.size() > kMaxCommandChars) cmdline = cmdline.substr(0, kMaxCommandChars - 3) + "...";
  owner.command = std::move(cmdline);
  // The cgroup first: a process cannot leave its job's cgroup, but any process may set
  // GPUFLEET_JOB_ID to another job's id (and its GPU use would count as that job's, its command
  // shown under it). Without a job cgroup, the agent's shim above the process names its job.
  owner.job_id = JobIdFromCgroup(ReadSmallFile(dir + "/cgroup"));
  if (owner.job_id.empty()) {
    // Outside every job's tree (the walk reached init): the variable, for lack of anything
    // better. A walk that could not finish (a parent ended meanwhile) says nothing: the variable
    // could be a job's own process naming another job.
    bool outside_every_job = false;
    owner.job_id = JobOfShimAbove(pid, outside_every_job);
    if (outside_every_job) owner.job_id = JobIdFromEnviron(ReadSmallFile(dir + "/environ"));
  }
  return owner;
}

std::string ProcessInspector::JobOfShimAbove(std::uint32_t pid, bool& outside_every_job) const {
  outside_every_job = false;
  long at = pid;
  // A chain of parents is at most as long as there are processes (pid_max's ceiling).
  for (long depth = 0; depth < (long{1} << 22); ++depth) {
    const std::string stat = ReadSmallFile(proc_root_ + "/" + std::to_string(at) + "/stat", 4096);
    if (stat.empty()) return {};  // ended while walked: unknown
    at = ParentInStat(stat);
    if (at <= 1) {
      outside_every_job = true;  // init (1) or the kernel (0) above
      return {};
    }
    const std::string dir = proc_root_ + "/" + std::to_string(at);
    // The shim (agent/job_shim.h), run by this agent's account: a job's own process may call
    // itself gpufleet-shim, but it cannot take the agent's account.
    const std::string status = ReadSmallFile(dir + "/status", 4096);
    if (status.rfind("Name:\tgpufleet-shim\n", 0) != 0) continue;
    const std::size_t uid_at = status.find("\nUid:");
    if (uid_at == std::string::npos || std::strtoll(status.c_str() + uid_at + 5, nullptr, 10) !=
                                           static_cast<long long>(geteuid())) {
      continue;
    }
    // Its first argument is the job's id (ShimSpec::job_id).
    const std::string cmdline = ReadSmallFile(dir + "/cmdline", 4096);
    const std::size_t start = cmdline.find('\0');
    if (start == std::string::npos) return {};
    const std::size_t end = cmdline.find('\0', start + 1);
    const std::string id =
        cmdline.substr(start + 1, end == std::string::npos ? 0 : end - start - 1);
    if (id.empty() || id.size() > 19 || id.find_first_not_of("0123456789") != std::string::npos) {
      return {};
    }
    return id;
  }
  return {};
}

std::string ProcessInspector::UserName(std::int64_t uid) const {
  if (uid < 0) return {};
  long size = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(size > 0 ? static_cast<std::size_t>(size) : 16384);
  passwd entry{};
  passwd* found = nullptr;
  if (getpwuid_r(static_cast<uid_t>(uid), &entry, buffer.data(), buffer.size(), &found) == 0 &&
      found != nullptr) {
    return found->pw_name;
  }
  return std::to_string(uid);
}

}  // namespace gpufleet::gpu

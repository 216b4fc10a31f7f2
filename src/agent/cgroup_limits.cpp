#include "agent/cgroup_limits.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpufleet::agent {
namespace {

namespace fs = std::filesystem;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Writes `text` to a cgroup control file; false when the kernel refuses it.
bool WriteControl(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) return false;
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

bool HasWord(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  std::string w;
  while (in >> w) {
    if (w == word) return true;
  }
  return false;
}

// The cgroup2 mount point, from /proc/self/mountinfo; "" when there is none.
std::string Cgroup2Mount() {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream after(line.substr(dash + 3));
    std::string type;
    after >> type;
    if (type != "cgroup2") continue;
    std::istringstream fields(line);
    std::string id, parent, devices, root, mount;
    fields >> id >> parent >> devices >> root >> mount;
    return mount;
  }
  return "";
}

// This process's cgroup v2 path ("0::/path" in /proc/self/cgroup).
std::string OwnCgroup() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return "/";
}

}  // namespace

CgroupLimits CgroupLimits::Detect(const std::string& root) {
  CgroupLimits c;
  fs::path base;
  if (!root.empty()) {
    base = root;
  } else {
    const std::string mount = Cgroup2Mount();
    if (mount.empty()) {
      c.why_ = "no cgroup v2 hierarchy is mounted";
      return c;
    }
    base = fs::path(mount) / fs::path(OwnCgroup()).relative_path();
  }
  const std::string controllers = ReadText(base / "cgroup.controllers");
  if (!HasWord(controllers, "cpu") || !HasWord(controllers, "memory")) {
    c.why_ = "the cgroup v2 hierarchy at " + base.string() +
             " does not offer the cpu and memory controllers (offers: " +
             (controllers.empty() ? std::string("none") : controllers.substr(0, 60)) + ")";
    while (!c.why_.empty() && (c.why_.back() == '\n')) c.why_.pop_back();
    return c;
  }
  if (!WriteControl(base / "cgroup.subtree_control", "+cpu +memory")) {
    // Processes in `base` (this agent) block enabling controllers: move into a leaf first.
    const fs::path leaf = base / "gpufleet-agent";
    std::error_code ec;
    fs::create_directories(leaf, ec);
    if (ec || !WriteControl(leaf / "cgroup.procs", std::to_string(getpid())) ||
        !WriteControl(base / "cgroup.subtree_control", "+cpu +memory")) {
      c.why_ = "cannot enable the cpu and memory controllers under " + base.string() +
               " (no permission, or other processes share that cgroup)";
      return c;
    }
  }
  const fs::path jobs = base / "gpufleet-jobs";
  std::error_code ec;
  fs::create_directories(jobs, ec);
  if (ec || !WriteControl(jobs / "cgroup.subtree_control", "+cpu +memory")) {
    c.why_ = "cannot prepare " + jobs.string() + " for job cgroups";
    return c;
  }
  c.available_ = true;
  c.why_.clear();
  c.jobs_dir_ = jobs.string();
  return c;
}

core::Result<std::string> CgroupLimits::Prepare(int64_t id, const JobLimits& limits) const {
  if (!available_) return core::Error{"cgroup limits are unavailable: " + why_};
  const fs::path dir = fs::path(jobs_dir_) / ("gpufleet-job-" + std::to_string(id));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return core::Error{"cannot create " + dir.string() + ": " + ec.message()};
  constexpr int64_t kPeriodUs = 100000;
  const std::string cpu =
      limits.cpu_milli > 0
          ? std::to_string(limits.cpu_milli * kPeriodUs / 1000) + " " + std::to_string(kPeriodUs)
          : "max " + std::to_string(kPeriodUs);
  if (!WriteControl(dir / "cpu.max", cpu)) {
    return core::Error{"cannot write " + (dir / "cpu.max").string()};
  }
  const std::string memory =
      limits.memory_mib > 0 ? std::to_string(limits.memory_mib * 1024 * 1024) : "max";
  if (!WriteControl(dir / "memory.max", memory)) {
    return core::Error{"cannot write " + (dir / "memory.max").string()};
  }
  return (dir / "cgroup.procs").string();
}

std::string CgroupLimits::ForLaunch(int64_t id, const JobLimits& limits, const char* who) const {
  if (!limits.any()) return "";
  auto prepared = Prepare(id, limits);
  if (prepared) return prepared.value();
  if (!said_) {
    std::fprintf(stderr, "%s: jobs run without CPU and memory limits: %s\n", who,
                 available_ ? prepared.error().c_str() : why_.c_str());
    said_ = true;
  }
  return "";
}

void CgroupLimits::Remove(int64_t id) const {
  if (!available_) return;
  std::error_code ec;
  // rmdir, not a recursive remove: a cgroup directory goes only once its processes have.
  fs::remove(fs::path(jobs_dir_) / ("gpufleet-job-" + std::to_string(id)), ec);
}

}  // namespace gpufleet::agent

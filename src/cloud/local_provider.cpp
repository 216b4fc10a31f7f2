#include "cloud/local_provider.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "cloud/detached_process.h"
#include "cloud/instance_list.h"
#include "cloud/run_program.h"

namespace gpufleet::cloud {
namespace fs = std::filesystem;
namespace {

constexpr int64_t kNoticeS = 120;  // a spot instance's notice before it is taken back
constexpr int64_t kMaxBootS = 86400;

core::Error IoError(const std::string& what, const std::string& path, int err) {
  return core::Error{what + " " + path + ": " + std::strerror(err), core::ErrorCode::kInternal};
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Written through `path.tmp` and renamed: a reader (or a controller killed meanwhile) sees the
// old file or the new one, never half of one.
core::Result<bool> WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return IoError("cannot create", tmp, errno);
  const char* data = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return IoError("cannot write", tmp, err);
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) return IoError("cannot write", tmp, errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return IoError("cannot rename", tmp, errno);
  return true;
}

core::Result<bool> MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return IoError("cannot create", path, errno);
  }
  return true;
}

std::string SelfExe() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : self.string();
}

int64_t NowS() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A pid file holds the bare pid until the Create that launched the process adds its start time.
// When that Create was cut short, the next Create of the name adds it (from /proc, while the
// process lives), so that a later Delete can tell the agent from a process that reused its pid.
core::Result<bool> CompletePidFile(const std::string& path) {
  const auto text = ReadFile(path);
  const auto id = text ? ParsePidFile(*text) : std::nullopt;
  if (!id || id->start_ticks != 0) return true;
  const uint64_t ticks = StartTicks(id->pid);
  if (ticks == 0) return true;  // gone: List shows the instance stopping
  return WriteFileAtomically(path, FormatPidFile(ProcessId{id->pid, ticks}));
}

}  // namespace

LocalProvider::LocalProvider(LocalProviderOptions options) : options_(std::move(options)) {
  if (options_.gpufleet_binary.empty()) options_.gpufleet_binary = SelfExe();
  // The agent runs in its instance's folder: every path it is given must not depend on ours.
  std::error_code ec;
  if (!options_.work_dir.empty()) {
    const fs::path absolute = fs::absolute(options_.work_dir, ec);
    if (!ec) options_.work_dir = absolute.lexically_normal().string();
  }
}

std::string LocalProvider::Dir(const std::string& name) const {
  return (fs::path(options_.work_dir) / name).string();
}

std::vector<std::string> LocalProvider::AgentArgv(const scale::NodeGroup& group,
                                                  const std::string& name,
                                                  const JoinInfo& join) const {
  // The join token is not on the command line (anyone may read that in /proc): the agent takes
  // it from GPUFLEET_JOIN_TOKEN in its environment (Create).
  std::vector<std::string> argv = {options_.gpufleet_binary,
                                   "agent",
                                   "--controller",
                                   join.controller_url,
                                   "--hostname",
                                   name,
                                   "--simulated-gpus",
                                   std::to_string(group.gpus),
                                   "--simulated-gpu-model",
                                   group.model_name.empty() ? std::string("H100-80GB")
                                                            : group.model_name,
                                   "--data-dir",
                                   Dir(name) + "/agent",
                                   "--listen",
                                   "127.0.0.1:0",
                                   // Every instance is on this machine: its peers reach it here.
                                   "--advertise-address",
                                   "127.0.0.1"};
  argv.insert(argv.end(), options_.extra_agent_args.begin(), options_.extra_agent_args.end());
  if (!join.ca_file.empty()) {
    argv.push_back("--ca");
    argv.push_back(join.ca_file);
  }
  return argv;
}

core::Result<bool> LocalProvider::Create(const scale::NodeGroup& group, const std::string& name,
                                         bool spot, const JoinInfo& join) {
  if (!ValidInstanceName(name)) {
    return core::Error{"name: must be 1 to 63 of a-z, 0-9 and '-', not starting with '-'",
                       core::ErrorCode::kInvalid, "name"};
  }
  if (!ValidInstanceName(group.name)) {
    return core::Error{"group: must be a valid group name", core::ErrorCode::kInvalid, "group"};
  }
  if (group.gpus < 1 || group.gpus > 64) {
    return core::Error{"gpus: the local provider simulates 1 to 64 GPUs a node",
                       core::ErrorCode::kInvalid, "gpus"};
  }
  if (group.boot_s < 0 || group.boot_s > kMaxBootS) {
    return core::Error{"boot_s: must be 0 to 86400", core::ErrorCode::kInvalid, "boot_s"};
  }
  for (const std::string* value : {&join.controller_url, &join.join_token, &join.ca_file}) {
    if (value->find('\0') != std::string::npos) {
      return core::Error{"join: a value contains a NUL byte", core::ErrorCode::kInvalid, "join"};
    }
  }
  const std::string dir = Dir(name);
  std::error_code ec;
  // Idempotent: an instance whose agent was launched exists already. One whose Create was cut
  // short before the launch (no pid file) is launched now.
  if (fs::exists(dir + "/pid", ec)) return CompletePidFile(dir + "/pid");
  fs::create_directories(options_.work_dir, ec);
  if (ec)
    return core::Error{"cannot create " + options_.work_dir + ": " + ec.message(),
                       core::ErrorCode::kInternal};
  if (auto made = MakeDir(dir); !made) return made;
  if (auto made = MakeDir(dir + "/agent"); !made) return made;
  const nlohmann::json record = {{"name", name},           {"group", group.name},
                                 {"spot", spot},           {"gpus", group.gpus},
                                 {"created_at_s", NowS()}, {"boot_s", group.boot_s}};
  if (auto written = WriteFileAtomically(dir + "/instance.json", record.dump() + "\n"); !written) {
    return written;
  }

  DetachedLaunch launch;
  launch.argv = AgentArgv(group, name, join);
  launch.env = InheritedEnvironment("GPUFLEET_");
  launch.env.push_back("GPUFLEET_JOIN_TOKEN=" + join.join_token);
  launch.cwd = dir;
  launch.log_path = dir + "/agent.log";
  launch.pid_path = dir + "/pid";
  launch.started_path = dir + "/started";
  launch.delay_s = group.boot_s;
  auto launched = LaunchDetached(launch);
  if (!launched) return launched.failure();
  // The process wrote its bare pid; its start time makes the record safe from pid reuse. When
  // another Create of the name (one cut short by a restart, its process still starting) claimed
  // the pid file between the check above and this launch, that agent is the instance's.
  return CompletePidFile(dir + "/pid");
}

core::Result<bool> LocalProvider::Delete(const std::string& name) {
  if (!ValidInstanceName(name)) {
    return core::Error{"name: must be 1 to 63 of a-z, 0-9 and '-', not starting with '-'",
                       core::ErrorCode::kInvalid, "name"};
  }
  const std::string dir = Dir(name);
  std::error_code ec;
  if (!fs::exists(dir, ec)) return true;
  if (const auto text = ReadFile(dir + "/pid")) {
    if (const auto id = ParsePidFile(*text)) {
      if (auto stopped = StopSession(*id, stop_grace_ms_); !stopped) return stopped;
    }
  }
  fs::remove_all(dir, ec);
  if (ec)
    return core::Error{"cannot remove " + dir + ": " + ec.message(), core::ErrorCode::kInternal};
  return true;
}

core::Result<Instance> LocalProvider::ReadInstance(const std::string& name) const {
  const std::string dir = Dir(name);
  const std::string path = dir + "/instance.json";
  const auto text = ReadFile(path);
  if (!text) return core::Error{"cannot read " + path, core::ErrorCode::kNotFound};
  const nlohmann::json record = nlohmann::json::parse(*text, nullptr, false);
  const auto str = [&](const char* key) -> const nlohmann::json* {
    const auto it = record.is_object() ? record.find(key) : record.end();
    return it != record.end() ? &*it : nullptr;
  };
  const nlohmann::json* group = str("group");
  const nlohmann::json* spot = str("spot");
  if (group == nullptr || !group->is_string() || spot == nullptr || !spot->is_boolean()) {
    return core::Error{path + ": damaged (group and spot expected); delete the instance",
                       core::ErrorCode::kInternal};
  }
  Instance instance;
  instance.name = name;
  instance.group = group->get<std::string>();
  instance.spot = spot->get<bool>();
  std::error_code ec;
  const auto pid_text = ReadFile(dir + "/pid");
  const auto id = pid_text ? ParsePidFile(*pid_text) : std::nullopt;
  if (!id) {
    instance.state = "pending";  // Create was cut short before the launch; a retry launches it
  } else if (!IsAlive(*id)) {
    instance.state = "stopping";
  } else {
    instance.state = fs::exists(dir + "/started", ec) ? "running" : "pending";
  }
  struct stat notice {};
  if (::stat((dir + "/interrupt").c_str(), &notice) == 0) {
    instance.interruption_at_s = static_cast<int64_t>(notice.st_mtime) + kNoticeS;
  }
  return instance;
}

core::Result<std::vector<Instance>> LocalProvider::List() {
  std::vector<Instance> instances;
  std::error_code ec;
  if (!fs::exists(options_.work_dir, ec)) return instances;
  fs::directory_iterator it(options_.work_dir, ec);
  if (ec)
    return core::Error{"cannot list " + options_.work_dir + ": " + ec.message(),
                       core::ErrorCode::kInternal};
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (!ValidInstanceName(name) || !entry.is_directory(ec)) continue;  // not an instance
    if (!fs::exists(entry.path() / "instance.json", ec)) {
      // A Create (or a Delete) cut short before its record was written: an instance that was
      // asked for and is not there yet, as a cloud lists one. A Create of the name finishes
      // it; a Delete removes it.
      Instance half;
      half.name = name;
      half.state = "pending";
      instances.push_back(std::move(half));
      continue;
    }
    auto instance = ReadInstance(name);
    if (!instance) return instance.failure();
    instances.push_back(std::move(instance).value());
  }
  std::sort(instances.begin(), instances.end(),
            [](const Instance& a, const Instance& b) { return a.name < b.name; });
  return instances;
}

}  // namespace gpufleet::cloud

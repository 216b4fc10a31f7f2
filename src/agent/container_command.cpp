#include "agent/container_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string_view>

#include "net/private_file.h"

namespace gpufleet::agent {
namespace {

// `name` looked up in $PATH as execvp would (the first executable regular file); `name` itself when
// it holds a '/' or is not found.
std::string OnPath(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  const std::string dirs =
      path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(start, end - start);
    start = end + 1;
    if (dir.empty() || dir.front() != '/') continue;  // a relative entry ("", "."): never
    const std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return name;
}

bool IsDocker(const ContainerHost& host) {
  return std::filesystem::path(host.runtime).filename() == "docker";
}

// The agent's variables the container runtime itself needs.
constexpr const char* kRuntimeVariables[] = {"PATH",
                                             "HOME",
                                             "TMPDIR",
                                             "XDG_RUNTIME_DIR",
                                             "XDG_CONFIG_HOME",
                                             "CONTAINERS_CONF",
                                             "CONTAINERS_STORAGE_CONF",
                                             "CONTAINERS_REGISTRIES_CONF",
                                             "REGISTRY_AUTH_FILE",
                                             "DOCKER_HOST",
                                             "DOCKER_CONFIG"};

// `strings` as a null-terminated array for exec (pointing into them).
std::vector<char*> ExecArray(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::vector<std::string> RuntimeEnvironment() {
  std::vector<std::string> env;
  for (const char* name : kRuntimeVariables) {
    if (const char* value = std::getenv(name)) env.push_back(std::string(name) + "=" + value);
  }
  if (std::getenv("PATH") == nullptr) {
    env.push_back("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  }
  return env;
}

ContainerHost DetectContainerHost(const std::string& runtime, bool simulated) {
  ContainerHost host;
  host.runtime = runtime.empty() ? "podman" : runtime;
  if (simulated) return host;
  namespace fs = std::filesystem;
  // Run by root for every container job (and to clean up after one): found once, by its full
  // path, and refused if anyone but root could replace it or a directory above it (a writable
  // directory early in root's PATH would otherwise run their program as root).
  // Its directory by its real path, its own name kept (a link named docker to a multi-call
  // binary still runs as docker); both the directory it is named in and the file it resolves to
  // must be root's alone (a link in a directory others may write could be swapped after a check).
  host.runtime = OnPath(host.runtime);
  if (!host.runtime.empty() && host.runtime.front() == '/') {
    const fs::path named(host.runtime);
    std::error_code resolve_error;
    const fs::path dir = fs::canonical(named.parent_path(), resolve_error);
    if (!resolve_error) host.runtime = (dir / named.filename()).string();
    if (geteuid() == 0) {
      auto why = net::ReplaceableByOthers(dir.string(), 0, "the container runtime's directory");
      if (!why) why = net::ReplaceableByOthers(host.runtime, 0, "the container runtime");
      if (why) {
        host.unsafe = *why +
                      " (it runs as root for every container job; install it where only root "
                      "writes, or name it with --container-runtime)";
      }
    }
  }
  std::error_code ec;
  // The NVIDIA container toolkit's CDI spec (nvidia-ctk cdi generate): the runtime injects the
  // devices, libraries and hooks itself.
  bool cdi = fs::exists("/etc/cdi/nvidia.yaml", ec) || fs::exists("/etc/cdi/nvidia.json", ec);
  for (const char* dir : {"/var/run/cdi", "/etc/cdi"}) {
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      cdi = cdi || name.rfind("nvidia", 0) == 0;
    }
  }
  if (cdi) {
    host.gpus = GpuAccess::kCdi;
    return host;
  }
  if (!fs::exists("/dev/nvidiactl", ec)) return host;
  host.gpus = GpuAccess::kDeviceNodes;
  for (const char* dev : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                          "/dev/nvidia-modeset"}) {
    if (fs::exists(dev, ec)) host.shared_devices.push_back(dev);
  }
  // The driver's user-space side, which must match the kernel module: without the toolkit, the
  // files it would inject, where the distribution put them.
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/aarch64-linux-gnu",
                          "/usr/lib"}) {
    for (const char* lib : {"libcuda.so.1", "libnvidia-ml.so.1", "libnvidia-ptxjit.so.1",
                            "libnvidia-nvvm.so.4"}) {
      const fs::path p = fs::path(dir) / lib;
      if (fs::exists(p, ec)) host.driver_files.push_back(p.string());
    }
  }
  for (const char* tool : {"/usr/bin/nvidia-smi"}) {
    if (fs::exists(tool, ec)) host.driver_files.push_back(tool);
  }
  return host;
}

std::string ContainerName(int64_t id, int64_t epoch, int rank) {
  return "gpufleet-job-" + std::to_string(id) + "-" + std::to_string(epoch) +
         (rank > 0 ? "-" + std::to_string(rank) : std::string());
}

std::vector<std::string> ContainerRunArgv(const ContainerRun& run, const ContainerHost& host) {
  std::vector<std::string> a = {host.runtime};
  // A --cgroup-parent that is a cgroupfs path: podman's systemd manager (its default on systemd
  // hosts) takes only slices.
  if (!IsDocker(host) && !run.cgroup_parent.empty()) a.push_back("--cgroup-manager=cgroupfs");
  a.insert(a.end(), {"run", "--name", run.name});
  if (!IsDocker(host) && !run.cidfile.empty()) a.push_back("--cidfile=" + run.cidfile);
  // Removed by the shim once it has ended (ContainerRemoveArgv), after its exit status is known.
  const std::string_view pull = run.pull == core::PullPolicy::kAlways      ? "always"
                                : run.pull == core::PullPolicy::kIfMissing ? "missing"
                                                                           : "never";
  a.push_back("--pull=" + std::string(pull));
  a.push_back("--user=" + std::to_string(run.uid) + ":" + std::to_string(run.gid));
  for (gid_t g : run.groups) {
    if (g != run.gid) a.push_back("--group-add=" + std::to_string(g));
  }
  a.insert(a.end(), {"--cap-drop=all", "--security-opt=no-new-privileges", "--network=host",
                     "--init"});
  // PyTorch's DataLoader workers pass tensors through /dev/shm; the runtimes' 64 MiB default
  // breaks them. Pages there count against the job's memory limit like any other.
  const int64_t shm_mib = run.memory_mib > 0 ? run.memory_mib : 8192;
  a.push_back("--shm-size=" + std::to_string(shm_mib) + "m");
  if (!run.cgroup_parent.empty()) {
    a.push_back("--cgroup-parent=" + run.cgroup_parent);
  } else if (run.memory_mib > 0) {
    // No cgroup of the job's (cgroups unavailable, or its own could not be made): the runtime's
    // cgroup is all that limits it, so it gets the job's memory, and no swap beyond.
    const std::string memory = std::to_string(run.memory_mib) + "m";
    a.push_back("--memory=" + memory);
    a.push_back("--memory-swap=" + memory);
  }
  if (run.cpu_milli > 0) {
    // At least a hundredth of a core, the kernel's smallest quota (jobs stored before submit
    // refused less would otherwise ask the runtime for what it cannot set).
    const int64_t milli = std::max<int64_t>(10, run.cpu_milli);
    const std::string cpus =
        std::to_string(milli / 1000) + "." + std::to_string(1000 + milli % 1000).substr(1);
    a.push_back("--cpus=" + cpus);
  }
  if (!run.env_file.empty()) a.push_back("--env-file=" + run.env_file);
  if (!run.workdir.empty()) a.push_back("--workdir=" + run.workdir);
  for (const core::BindMount& m : run.spec.mounts) {
    a.push_back("--mount=type=bind,source=" + m.source + ",destination=" + m.target +
                (m.read_only ? ",ro=true" : ""));
  }
  switch (host.gpus) {
    case GpuAccess::kCdi:
      for (int g : run.gpu_indices) a.push_back("--device=nvidia.com/gpu=" + std::to_string(g));
      break;
    case GpuAccess::kDeviceNodes:
      // Never a guess: /dev/nvidia<index> may be another job's GPU (minor numbers need not
      // follow the indices), so a GPU whose node is not known is not passed at all.
      for (std::size_t k = 0; k < run.gpu_indices.size(); ++k) {
        if (k < run.gpu_device_nodes.size() && !run.gpu_device_nodes[k].empty()) {
          a.push_back("--device=" + run.gpu_device_nodes[k]);
        }
      }
      for (const std::string& d : host.shared_devices) a.push_back("--device=" + d);
      for (const std::string& f : host.driver_files) {
        a.push_back("--mount=type=bind,source=" + f + ",destination=" + f + ",ro=true");
      }
      break;
    case GpuAccess::kNone:
      break;
  }
  a.push_back(run.spec.image);
  a.insert(a.end(), run.argv.begin(), run.argv.end());
  return a;
}

std::vector<std::string> ContainerRemoveArgv(const std::string& name, const std::string& cidfile,
                                             const ContainerHost& host) {
  // --volumes: the anonymous volumes of an image's VOLUME lines go with it, or every job would
  // leave them in the runtime's storage.
  if (IsDocker(host) || cidfile.empty()) return {host.runtime, "rm", "--force", "--volumes", name};
  return {host.runtime, "rm", "--force", "--volumes", "--time=0", "--ignore", "--cidfile", cidfile};
}

pid_t SpawnQuietly(const std::vector<std::string>& args) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv = ExecArray(copy);
  std::vector<std::string> env_strings = RuntimeEnvironment();
  std::vector<char*> env = ExecArray(env_strings);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&files, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&files, 3);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, argv[0], &files, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&files);
  return spawned == 0 ? pid : -1;
}

void RemoveContainerNow(const std::string& name, const std::string& cidfile,
                        const ContainerHost& host) {
  const pid_t pid = SpawnQuietly(ContainerRemoveArgv(name, cidfile, host));
  if (pid < 0) return;
  for (int tick = 0; tick < 300; ++tick) {
    if (waitpid(pid, nullptr, WNOHANG) != 0) return;
    usleep(100 * 1000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

std::optional<std::vector<std::string>> ListImages(const ContainerHost& host) {
  std::vector<std::string> args = {host.runtime, "images", "--format",
                                   "{{.Repository}}:{{.Tag}}"};
  std::vector<char*> argv = ExecArray(args);
  std::vector<std::string> env_strings = RuntimeEnvironment();
  std::vector<char*> env = ExecArray(env_strings);
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return std::nullopt;
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&files, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&files, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&files, 3);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, argv[0], &files, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&files);
  close(out[1]);
  if (spawned != 0) {
    close(out[0]);
    return std::nullopt;
  }
  std::string text;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    if (std::chrono::steady_clock::now() >= deadline) {
      timed_out = true;
      break;
    }
    pollfd ready{out[0], POLLIN, 0};
    const int r = poll(&ready, 1, 250);
    if (r > 0) {
      char buffer[8192];
      const ssize_t n = read(out[0], buffer, sizeof buffer);
      if (n == 0 || (n < 0 && errno != EINTR)) break;
      if (n > 0 && text.size() < (1 << 20)) text.append(buffer, static_cast<std::size_t>(n));
    } else if (r < 0 && errno != EINTR) {
      break;
    }
  }
  close(out[0]);
  // Past the deadline, or the output broke off: never wait on a runtime that may hang.
  bool exited = false;
  for (int tick = 0; tick < 20 && !exited; ++tick) {  // up to 1 s after its output closed
    int probe = 0;
    exited = waitpid(pid, &probe, WNOHANG) == pid;
    if (exited) {
      if (timed_out || !WIFEXITED(probe) || WEXITSTATUS(probe) != 0) return std::nullopt;
      break;
    }
    if (timed_out) break;
    usleep(50 * 1000);
  }
  if (!exited) {
    kill(pid, SIGKILL);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return std::nullopt;
  }
  std::vector<std::string> images;
  std::set<std::string> seen;
  for (std::size_t start = 0; start < text.size() && images.size() < 512;) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.find("<none>") != std::string::npos || !core::CheckImageReference(line)) continue;
    if (seen.insert(line).second) images.push_back(line);
  }
  return images;
}

std::string ContainerEnvFile(const std::vector<std::pair<std::string, std::string>>& env) {
  std::string text;
  for (const auto& [name, value] : env) {
    if (!core::ContainerEnvEntryOk(name, value)) continue;
    text += name + "=" + value + "\n";
  }
  return text;
}

}  // namespace gpufleet::agent

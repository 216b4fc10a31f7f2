#pragma once
// How a container job is started: the OCI runtime CLI's command line (podman, or docker where
// present; both take the same flags used here), its environment file, and how the node's GPUs
// reach the container.
//  - `ContainerRunArgv` is pure: it turns a job's container, identity, GPUs and limits into
//    `RUNTIME run ...`. The container runs in the foreground under the job's shim (which captures
//    its output to the job's log, and whose process group takes the stop signals: the runtime's
//    signal proxy hands SIGTERM to the container's init, `--init`, which hands it to the job);
//    after it ends the shim runs `ContainerRemoveArgv` (exited containers are removed; one left
//    running after its runtime client was killed is killed).
//  - Security: `--user UID:GID` plus the account's groups, `--cap-drop all`,
//    `no-new-privileges`, never `--privileged`, no host PID or IPC namespace; the host network
//    (multi-node jobs' MASTER_ADDR, as for host jobs).
//  - Limits: the container's cgroup is made under the job's own (`--cgroup-parent`), so the job's
//    memory limit, usage figures and OOM watch hold for it as for a host job; `--cpus` repeats
//    the CPU limit for hierarchies where the parent path differs (cgroup v1 with per-hierarchy
//    paths).
//  - GPUs: CDI (`--device nvidia.com/gpu=N`) where the NVIDIA container toolkit wrote a spec,
//    else the device nodes and the driver's libraries (read-only); none with simulated GPUs.
//    CUDA_VISIBLE_DEVICES counts from 0 over the job's GPUs, as Kubernetes' device plugin does.
#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/container.h"

namespace gpufleet::agent {

enum class GpuAccess { kNone, kCdi, kDeviceNodes };

// What the node offers containers, found once at the agent's start (DetectContainerHost).
struct ContainerHost {
  std::string runtime = "podman";  // the CLI: a path once found on $PATH ("podman", "docker")
  // Why container jobs are refused here: the runtime, run as root, could be replaced by another
  // account ("" : it is safe, or the agent is not root).
  std::string unsafe;
  GpuAccess gpus = GpuAccess::kNone;
  // kDeviceNodes: /dev/nvidiactl, /dev/nvidia-uvm, ... (the per-GPU /dev/nvidiaN are added per
  // job) and the driver's user-space files, mounted read-only at the same path.
  std::vector<std::string> shared_devices;
  std::vector<std::string> driver_files;
};

// `runtime` found on $PATH (as given when `simulated`, or not found) and checked (`unsafe`); GPU
// access from the CDI spec directories and /dev (`simulated`: none).
ContainerHost DetectContainerHost(const std::string& runtime, bool simulated);

struct ContainerRun {
  std::string name;  // ContainerName
  core::ContainerSpec spec;
  core::PullPolicy pull = core::PullPolicy::kNever;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  std::string workdir;        // "" : the image's
  std::string env_file;       // NAME=value lines (ContainerEnvFile)
  std::string cidfile;        // where podman records the container's id (none for docker)
  std::string cgroup_parent;  // "" : the runtime's default, and --memory limits the container
  int64_t cpu_milli = 0;      // 0: no CPU limit
  int64_t memory_mib = 0;     // sizes /dev/shm (0: 8 GiB; the cgroup limits the memory itself)
  std::vector<int> gpu_indices;
  // Each of those GPUs' device node (GpuProbe::DeviceNode; /dev/nvidiaN with N the minor number,
  // not always the index); missing or "" : not known, and that GPU is not passed (kDeviceNodes).
  std::vector<std::string> gpu_device_nodes;
  std::vector<std::string> argv;
};

// The container's name for rank `rank` of job `id` in its `epoch`: gpufleet-job-<id>-<epoch>, and
// -<rank> after it for ranks above 0 (nodes sharing one runtime's storage must not collide).
std::string ContainerName(int64_t id, int64_t epoch, int rank = 0);
// `RUNTIME run ...` for `run` on `host`.
std::vector<std::string> ContainerRunArgv(const ContainerRun& run, const ContainerHost& host);
// Removes the container, killing it first if it still runs (podman: no stop timeout). podman
// removes the container whose id `run`'s --cidfile recorded (only one this run created: a name
// taken by another's container is never removed); docker by name.
std::vector<std::string> ContainerRemoveArgv(const std::string& name, const std::string& cidfile,
                                             const ContainerHost& host);
// Starts `argv` with no input or output and does not wait: the pid (reap it), or -1.
pid_t SpawnQuietly(const std::vector<std::string>& argv);
// The environment the container runtime runs with, as NAME=value: the agent's few variables it
// needs (where its configuration and storage are; PATH, a default when the agent has none), never
// the agent's others (a token, a database password) nor a job's.
std::vector<std::string> RuntimeEnvironment();
// Runs ContainerRemoveArgv and waits for it (at most 30 s): for a container whose shim is gone.
void RemoveContainerNow(const std::string& name, const std::string& cidfile,
                        const ContainerHost& host);
// The images the runtime holds ("repository:tag", untagged ones left out, at most 512), or
// nothing when it cannot say within 5 s (no runtime, a failing one).
std::optional<std::vector<std::string>> ListImages(const ContainerHost& host);
// The env file's text: one NAME=value per line. What the runtimes' env-file readers would
// misread is left out (the controller refuses it at submit): names other than letters, digits
// and '_' (not starting with a digit), values with a line break, lines of 64 KiB or more.
std::string ContainerEnvFile(const std::vector<std::pair<std::string, std::string>>& env);

}  // namespace gpufleet::agent

#include "agent/container_command.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace gpufleet::agent {
namespace {

bool Has(const std::vector<std::string>& argv, const std::string& arg) {
  return std::find(argv.begin(), argv.end(), arg) != argv.end();
}

ContainerRun SampleRun() {
  ContainerRun run;
  run.name = ContainerName(7, 3);
  run.spec.image = "localhost/train:1";
  run.spec.mounts = {{"/data/set", "/data", true}, {"/scratch/u", "/out", false}};
  run.uid = 1000;
  run.gid = 1000;
  run.groups = {1000, 44};
  run.env_file = "/var/lib/gpufleet/logs/7-3.log.env";
  run.cidfile = "/var/lib/gpufleet/logs/7-3.log.cid";
  run.cgroup_parent = "/gpufleet-jobs-ab/gpufleet-job-7";
  run.cpu_milli = 2500;
  run.memory_mib = 4096;
  run.gpu_indices = {2, 5};
  run.argv = {"python3", "train.py", "--epochs", "3"};
  return run;
}

TEST(ContainerCommand, RunsAsTheUserWithoutPrivilegeOnTheHostNetworkUnderTheJobsCgroup) {
  const std::vector<std::string> a = ContainerRunArgv(SampleRun(), ContainerHost{});
  ASSERT_GE(a.size(), 6U);
  EXPECT_EQ(a[0], "podman");
  EXPECT_EQ(a[1], "--cgroup-manager=cgroupfs") << "a cgroupfs parent, on systemd hosts too";
  EXPECT_EQ(a[2], "run");
  EXPECT_TRUE(Has(a, "--cidfile=/var/lib/gpufleet/logs/7-3.log.cid"));
  EXPECT_TRUE(Has(a, "gpufleet-job-7-3"));
  EXPECT_EQ(ContainerName(7, 3, 1), "gpufleet-job-7-3-1") << "ranks above 0 are told apart";
  EXPECT_TRUE(Has(a, "--user=1000:1000"));
  EXPECT_TRUE(Has(a, "--group-add=44"));
  EXPECT_FALSE(Has(a, "--group-add=1000")) << "the primary group is not repeated";
  EXPECT_TRUE(Has(a, "--cap-drop=all"));
  EXPECT_TRUE(Has(a, "--security-opt=no-new-privileges"));
  EXPECT_TRUE(Has(a, "--network=host"));
  EXPECT_TRUE(Has(a, "--init"));
  EXPECT_TRUE(Has(a, "--pull=never"));
  EXPECT_TRUE(Has(a, "--cgroup-parent=/gpufleet-jobs-ab/gpufleet-job-7"));
  EXPECT_TRUE(Has(a, "--cpus=2.500"));
  ContainerRun tiny = SampleRun();  // a job stored before submit refused under 0.01 cores
  tiny.cpu_milli = 3;
  EXPECT_TRUE(Has(ContainerRunArgv(tiny, ContainerHost{}), "--cpus=0.010"));
  EXPECT_FALSE(Has(a, "--memory=4096m")) << "the job's cgroup limits its memory";
  // Found by a review: without a cgroup of the job's, the container ran with no memory limit
  // at all. The runtime's own cgroup then holds it to the job's memory.
  ContainerRun unparented = SampleRun();
  unparented.cgroup_parent.clear();
  const std::vector<std::string> u = ContainerRunArgv(unparented, ContainerHost{});
  EXPECT_TRUE(Has(u, "--memory=4096m"));
  EXPECT_TRUE(Has(u, "--memory-swap=4096m"));
  EXPECT_FALSE(Has(u, "--cgroup-manager=cgroupfs"));
  EXPECT_TRUE(Has(a, "--shm-size=4096m"));
  EXPECT_TRUE(Has(a, "--env-file=/var/lib/gpufleet/logs/7-3.log.env"));
  EXPECT_TRUE(Has(a, "--mount=type=bind,source=/data/set,destination=/data,ro=true"));
  EXPECT_TRUE(Has(a, "--mount=type=bind,source=/scratch/u,destination=/out"));
  for (const std::string& arg : a) {
    EXPECT_EQ(arg.find("--privileged"), std::string::npos);
    EXPECT_EQ(arg.find("--pid"), std::string::npos);
    EXPECT_EQ(arg.find("--ipc"), std::string::npos);
    EXPECT_EQ(arg.find("--cap-add"), std::string::npos);
    EXPECT_EQ(arg.find("--device"), std::string::npos) << "no GPU access without a driver";
  }
  // The image, then the job's own argv, last and untouched.
  const auto image = std::find(a.begin(), a.end(), "localhost/train:1");
  ASSERT_NE(image, a.end());
  EXPECT_EQ(std::vector<std::string>(image + 1, a.end()),
            (std::vector<std::string>{"python3", "train.py", "--epochs", "3"}));
}

TEST(ContainerCommand, GpusThroughCdiOrDeviceNodes) {
  ContainerHost cdi;
  cdi.gpus = GpuAccess::kCdi;
  const auto a = ContainerRunArgv(SampleRun(), cdi);
  EXPECT_TRUE(Has(a, "--device=nvidia.com/gpu=2"));
  EXPECT_TRUE(Has(a, "--device=nvidia.com/gpu=5"));
  ContainerHost nodes;
  nodes.gpus = GpuAccess::kDeviceNodes;
  nodes.shared_devices = {"/dev/nvidiactl", "/dev/nvidia-uvm"};
  nodes.driver_files = {"/usr/lib/x86_64-linux-gnu/libcuda.so.1"};
  ContainerRun run = SampleRun();
  run.gpu_device_nodes = {"/dev/nvidia2", "/dev/nvidia5"};
  const auto b = ContainerRunArgv(run, nodes);
  EXPECT_TRUE(Has(b, "--device=/dev/nvidia2"));
  EXPECT_TRUE(Has(b, "--device=/dev/nvidia5"));
  EXPECT_FALSE(Has(b, "--device=/dev/nvidia0")) << "only the job's GPUs";
  EXPECT_TRUE(Has(b, "--device=/dev/nvidiactl"));
  EXPECT_TRUE(Has(b,
                  "--mount=type=bind,source=/usr/lib/x86_64-linux-gnu/libcuda.so.1,"
                  "destination=/usr/lib/x86_64-linux-gnu/libcuda.so.1,ro=true"));
  // The device node is the driver's minor number, which need not be the index.
  ContainerRun by_minor = SampleRun();
  by_minor.gpu_device_nodes = {"/dev/nvidia7", ""};
  const auto c = ContainerRunArgv(by_minor, nodes);
  EXPECT_TRUE(Has(c, "--device=/dev/nvidia7"));
  EXPECT_FALSE(Has(c, "--device=/dev/nvidia2")) << "GPU 2's node is /dev/nvidia7";
  EXPECT_FALSE(Has(c, "--device=/dev/nvidia5")) << "unknown: not passed, never guessed";
}

TEST(ContainerCommand, PullPolicyAndRemovalPerRuntime) {
  ContainerRun run = SampleRun();
  run.pull = core::PullPolicy::kIfMissing;
  EXPECT_TRUE(Has(ContainerRunArgv(run, ContainerHost{}), "--pull=missing"));
  run.pull = core::PullPolicy::kAlways;
  EXPECT_TRUE(Has(ContainerRunArgv(run, ContainerHost{}), "--pull=always"));
  EXPECT_EQ(ContainerRemoveArgv("gpufleet-job-7-3", "/l/7-3.log.cid", ContainerHost{}),
            (std::vector<std::string>{"podman", "rm", "--force", "--volumes", "--time=0",
                                      "--ignore", "--cidfile", "/l/7-3.log.cid"}))
      << "by the id this run recorded, never by a name another's container may hold";
  ContainerHost docker;
  docker.runtime = "/usr/bin/docker";
  EXPECT_FALSE(Has(ContainerRunArgv(SampleRun(), docker), "--cgroup-manager=cgroupfs"));
  EXPECT_EQ(ContainerRemoveArgv("gpufleet-job-7-3", "/l/7-3.log.cid", docker),
            (std::vector<std::string>{"/usr/bin/docker", "rm", "--force", "--volumes",
                                      "gpufleet-job-7-3"}))
      << "anonymous volumes go with the container";
}

TEST(ContainerCommand, EnvFileHoldsOneVariablePerLineAndDropsWhatCannot) {
  EXPECT_EQ(ContainerEnvFile({{"A", "1"},
                              {"B", "x y=z"},
                              {"BAD", "two\nlines"},
                              {"C=D", "e"},
                              {"#E", "f"},
                              {"G", "h\r"},
                              {"H", std::string(70000, 'x')}}),
            "A=1\nB=x y=z\n");
}

// Found by a review: the runtime was run by name, so root found it on its PATH at each container
// job; a directory on that PATH others may write let them put a `podman` there that ran as root.
TEST(ContainerCommand, TheRuntimeIsFoundOnceByItsPathAndRefusedWhereOthersCouldReplaceIt) {
  namespace fs = std::filesystem;
  const fs::path open_dir = fs::temp_directory_path() / ("gf-runtime-" + std::to_string(getpid()));
  fs::create_directories(open_dir);
  fs::permissions(open_dir, fs::perms::all);  // 0777, not sticky
  std::ofstream(open_dir / "podman") << "#!/bin/sh\n";
  fs::permissions(open_dir / "podman", fs::perms::owner_all);
  const std::string saved = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", (open_dir.string() + ":" + saved).c_str(), 1);
  const ContainerHost planted = DetectContainerHost("podman", false);
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_EQ(planted.runtime, (fs::canonical(open_dir) / "podman").string());
  if (geteuid() == 0) {
    EXPECT_NE(planted.unsafe.find("the container runtime"), std::string::npos) << planted.unsafe;
  }
  const ContainerHost sh = DetectContainerHost("sh", false);  // root's own, in root's directories
  EXPECT_EQ(sh.runtime.front(), '/');
  EXPECT_EQ(fs::path(sh.runtime).filename(), "sh") << "named as found, not as it resolves";
  EXPECT_EQ(sh.unsafe, "");
  EXPECT_EQ(ContainerRunArgv(SampleRun(), sh).front(), sh.runtime);
  // A link in that open directory to root's own file: swappable, so refused too.
  fs::remove(open_dir / "podman");
  fs::create_symlink("/bin/sh", open_dir / "podman");
  ::setenv("PATH", (open_dir.string() + ":" + saved).c_str(), 1);
  const ContainerHost linked = DetectContainerHost("podman", false);
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_EQ(fs::path(linked.runtime).filename(), "podman");
  if (geteuid() == 0) {
    EXPECT_NE(linked.unsafe.find("directory"), std::string::npos) << linked.unsafe;
  }
  fs::remove_all(open_dir);
}

TEST(ContainerCommand, SimulatedGpusGetNoDevices) {
  const ContainerHost host = DetectContainerHost("podman", true);
  EXPECT_EQ(host.gpus, GpuAccess::kNone);
  EXPECT_EQ(host.runtime, "podman");
}

}  // namespace
}  // namespace gpufleet::agent

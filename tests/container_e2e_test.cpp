// Issue 17 end to end: container jobs (`--image`) through `gpufleet controller` and two remote
// agents on loopback, with real rootful podman (runtime runc) and an image built here from
// busybox-static by `podman import` (no registry). Each test says why it skips where this machine
// cannot run containers (no podman, no busybox-static, podman refusing to run): skipped, never
// passed.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "e2e_cgroups.h"
#include "e2e_process.h"

namespace gpufleet {
namespace {

using e2e::Slurp;
using e2e::WaitUntil;
using nlohmann::json;

constexpr const char* kImage = "localhost/gpufleet-e2e:1";

// Why containers cannot run here ("" : they can), found once for the whole suite.
std::string& ContainerTrouble() {
  static std::string why = "not checked";
  return why;
}

class Containers : public ::testing::Test {
 protected:
  static inline std::filesystem::path suite_dir_;

  static void SetUpTestSuite() {
    suite_dir_ = std::filesystem::temp_directory_path() /
                 ("gpufleet-containers-" + std::to_string(::getpid()));
    std::filesystem::remove_all(suite_dir_);
    std::filesystem::create_directories(suite_dir_ / "rootfs" / "bin");
    std::string& why = ContainerTrouble();
    if (e2e::Sh("command -v podman >/dev/null 2>&1").second != 0) {
      why = "podman is not installed (apt-get install podman runc catatonit)";
      return;
    }
    const std::string busybox = "/bin/busybox";
    if (e2e::Sh("test -x " + busybox + " && ldd " + busybox +
                " 2>&1 | grep -q 'not a dynamic executable'")
            .second != 0) {
      why = "no static busybox to build the test image from (apt-get install busybox-static)";
      return;
    }
    // This machine kind: runc (crun refuses its hybrid cgroup layout), cgroupfs (no systemd), no
    // raised ulimits (not permitted), events to a file (no journald).
    {
      std::ofstream conf(suite_dir_ / "containers.conf");
      conf << "[containers]\ndefault_ulimits = []\nlog_driver = \"k8s-file\"\n"
              "[engine]\nruntime = \"runc\"\ncgroup_manager = \"cgroupfs\"\n"
              "events_logger = \"file\"\n";
    }
    ::setenv("CONTAINERS_CONF", (suite_dir_ / "containers.conf").c_str(), 1);
    const std::string root = (suite_dir_ / "rootfs").string();
    std::string make = "cp " + busybox + " '" + root + "/bin/busybox' && cd '" + root +
                       "/bin' && for c in sh id env cat echo sleep head tail dd yes true seq; do "
                       "ln -sf busybox $c; done && mkdir -p '" +
                       root + "/tmp' '" + root + "/data' && tar -C '" + root + "' -cf '" +
                       suite_dir_.string() +
                       // As NGC and CUDA images do: an NVIDIA runtime hook would add every GPU.
                       "/rootfs.tar' . && podman import --change "
                       "'ENV NVIDIA_VISIBLE_DEVICES=all' '" +
                       suite_dir_.string() + "/rootfs.tar' " + kImage + " 2>&1";
    auto made = e2e::Sh(make);
    if (made.second != 0) {
      why = "podman cannot import a local image: " + made.first.substr(0, 400);
      return;
    }
    auto ran = e2e::Sh(std::string("podman run --rm --network=host ") + kImage +
                       " sh -c 'echo container-ok' 2>&1");
    if (ran.second != 0 || ran.first.find("container-ok") == std::string::npos) {
      why = "podman cannot run a container here: " + ran.first.substr(0, 400);
      return;
    }
    why.clear();
  }
  static void TearDownTestSuite() {
    if (ContainerTrouble().empty()) e2e::Sh(std::string("podman rmi -f ") + kImage + " >/dev/null 2>&1");
    std::filesystem::remove_all(suite_dir_);
  }

  void SetUp() override {
    if (!ContainerTrouble().empty()) GTEST_SKIP() << "containers cannot run here: " << ContainerTrouble();
    dir_ = suite_dir_ / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "data" / "in");
    std::ofstream(dir_ / "data" / "in" / "greeting") << "hello from the host\n";
    std::filesystem::permissions(dir_, std::filesystem::perms::others_exec,
                                 std::filesystem::perm_options::add);
    StartController();
    alice_ = json::parse(Cli("users add alice --json"))["token"].get<std::string>();
  }
  void TearDown() override {
    for (auto& [name, pid] : agents_) e2e::KillAndReap(pid);
    e2e::KillAndReap(controller_);
    e2e::Sh("podman ps -a --format '{{.Names}}' | grep '^gpufleet-job-' | xargs -r podman rm -f "
            "--time=0 >/dev/null 2>&1");
    e2e::Sh("pkill -9 -f '" + dir_.string() + "' 2>/dev/null");
    e2e::ReleaseJobCgroupsUnder(dir_.string());
    std::filesystem::remove_all(dir_);
  }

  void StartController() {
    std::filesystem::remove(dir_ / "ctl" / "server");
    controller_ = e2e::Spawn(
        {GPUFLEET_BINARY, "controller", "--data-dir", (dir_ / "ctl").string(), "--listen",
         listen_, "--lease", "10", "--stop-grace", "1", "--container-allow-image",
         "localhost/gpufleet-e2e", "--container-allow-mount", (dir_ / "data").string()},
        (dir_ / "controller.log").string());
    ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(dir_ / "ctl" / "server"); }, 10))
        << Slurp((dir_ / "controller.log").string());
    url_ = e2e::FirstLine((dir_ / "ctl" / "server").string());
    listen_ = url_.substr(url_.find("//") + 2);
    token_ = e2e::FirstLine((dir_ / "ctl" / "token").string());
  }
  void StartAgent(const std::string& node, const std::vector<std::string>& more = {}) {
    std::vector<std::string> args = {GPUFLEET_BINARY,
                                     "agent",
                                     "--controller",
                                     url_,
                                     "--token-file",
                                     (dir_ / "ctl" / "token").string(),
                                     "--hostname",
                                     node,
                                     "--data-dir",
                                     (dir_ / node).string(),
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--simulated-gpus",
                                     "4",
                                     "--heartbeat",
                                     "0.2",
                                     "--advertise-address",
                                     "127.0.0.1",
                                     "--run-as-map",
                                     "alice=nobody"};
    args.insert(args.end(), more.begin(), more.end());
    agents_[node] = e2e::Spawn(args, (dir_ / (node + ".log")).string());
    ASSERT_GT(agents_[node], 0);
    ASSERT_TRUE(WaitUntil([&] { return NodeField(node, "state") == "READY"; }, 10))
        << Slurp((dir_ / (node + ".log")).string());
  }
  std::string Cli(const std::string& args) {
    return e2e::Sh("GPUFLEET_DATA_DIR='" + (dir_ / "ctl").string() + "' '" + GPUFLEET_BINARY +
                   "' " + args + " 2>&1")
        .first;
  }
  httplib::Client Http(const std::string& token) {
    httplib::Client c(url_);
    c.set_bearer_token_auth(token);
    return c;
  }
  json Get(const std::string& path) {
    auto r = Http(token_).Get(path);
    if (!r || r->status != 200) return json();
    return json::parse(r->body, nullptr, false);
  }
  std::string NodeField(const std::string& node, const std::string& field) {
    for (const json& n : Get("/v1/nodes")) {
      if (n["name"] == node && n.contains(field) && n[field].is_string()) return n[field];
    }
    return "";
  }
  // Submits as alice; the response's status and body.
  std::pair<int, json> Post(const json& body) {
    auto r = Http(alice_).Post("/v1/jobs", body.dump(), "application/json");
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  int64_t Submit(json body) {
    body["image"] = kImage;
    auto [status, answer] = Post(body);
    EXPECT_EQ(status, 201) << answer.dump();
    return status == 201 ? answer["id"].get<int64_t>() : -1;
  }
  json WaitFor(int64_t id, const std::string& state, double seconds = 30) {
    json job;
    WaitUntil(
        [&] {
          job = Get("/v1/jobs/" + std::to_string(id));
          return job.is_object() && job["state"] == state;
        },
        seconds);
    EXPECT_EQ(job.is_object() ? job["state"] : json(), state) << job.dump();
    return job;
  }
  std::string Logs(int64_t id) {
    auto r = Http(token_).Get("/v1/jobs/" + std::to_string(id) + "/logs");
    return r && r->status == 200 ? r->body : "";
  }
  static bool ContainerExists(int64_t id, int64_t epoch) {
    return e2e::Sh("podman container exists gpufleet-job-" + std::to_string(id) + "-" +
                   std::to_string(epoch))
               .second == 0;
  }

  std::filesystem::path dir_;
  pid_t controller_ = -1;
  std::map<std::string, pid_t> agents_;
  std::string url_, token_, alice_;
  std::string listen_ = "127.0.0.1:0";
};

TEST_F(Containers, RunsAsTheSubmitterWithItsGpusVariablesMountAndLogThenIsRemoved) {
  StartAgent("alpha");
  const std::string mount = (dir_ / "data" / "in").string() + ":/data/in:ro";
  const int64_t id = Submit(
      {{"argv",
        {"sh", "-c",
         "echo uid=$(id -u) gid=$(id -g) cvd=$CUDA_VISIBLE_DEVICES foo=$FOO job=$GPUFLEET_JOB_ID "
         "world=$WORLD_SIZE nvd=$NVIDIA_VISIBLE_DEVICES; cat /data/in/greeting; echo x > "
         "/data/in/w 2>/dev/null || echo "
         "read-only"}},
       {"gpus", 2},
       {"env", {{"FOO", "bar baz"}}},
       {"mounts", {mount}}});
  const json done = WaitFor(id, "SUCCEEDED");
  EXPECT_EQ(done["image"], kImage);
  EXPECT_EQ(done["mounts"], json::array({mount}));
  const std::string log = Logs(id);
  EXPECT_NE(log.find("uid=65534 gid=65534"), std::string::npos) << "runs as alice's account (nobody): " << log;
  EXPECT_NE(log.find("cvd=0,1 "), std::string::npos) << "its GPUs counted from 0: " << log;
  EXPECT_NE(log.find("foo=bar baz"), std::string::npos) << log;
  EXPECT_NE(log.find("job=" + std::to_string(id)), std::string::npos) << log;
  EXPECT_NE(log.find("world=1"), std::string::npos) << log;
  // The image says NVIDIA_VISIBLE_DEVICES=all; the job's own GPUs are devices, and the variable
  // is "void" so that no NVIDIA runtime hook adds the node's other GPUs.
  EXPECT_NE(log.find("nvd=void"), std::string::npos) << log;
  EXPECT_NE(log.find("hello from the host"), std::string::npos) << "the bind mount: " << log;
  EXPECT_NE(log.find("read-only"), std::string::npos) << "mounted :ro: " << log;
  EXPECT_NE(log.find("simulated GPUs"), std::string::npos) << "the note on GPU devices: " << log;
  bool noted = false;
  for (const json& e : done["events"]) {
    noted = noted || (e["what"] == "container" &&
                      e["detail"].get<std::string>().find("simulated GPUs") != std::string::npos);
  }
  EXPECT_TRUE(noted) << "the job's events say no GPU device reached it: " << done["events"].dump();
  EXPECT_FALSE(ContainerExists(id, done["epoch"].get<int64_t>())) << "exited containers go";
  // The node says which images it holds (its agent lists them once a minute, first at start).
  json images;
  EXPECT_TRUE(WaitUntil(
      [&] {
        for (const json& n : Get("/v1/nodes")) {
          if (n["name"] == "alpha") images = n.value("images", json::array());
        }
        return std::find(images.begin(), images.end(), json(kImage)) != images.end();
      },
      10))
      << images.dump();
  EXPECT_NE(Cli("nodes").find(std::string("container images here: ") ), std::string::npos);
  // Its exit code travels.
  const int64_t failing = Submit({{"argv", {"sh", "-c", "exit 7"}}, {"gpus", 1}});
  EXPECT_EQ(WaitFor(failing, "FAILED")["exit_code"], 7);
}

TEST_F(Containers, ItsMemoryLimitKillsItAndThatIsReportedAsAnOomKill) {
  StartAgent("alpha");
  if (NodeField("alpha", "limits") == "none") {
    GTEST_SKIP() << "no usable cgroup hierarchy here: " << NodeField("alpha", "limits_why");
  }
  const int64_t id = Submit({{"argv", {"sh", "-c", "x=$(yes | head -c 300000000); echo survived"}},
                             {"gpus", 1},
                             {"memory_mib", 64}});
  const json done = WaitFor(id, "FAILED");
  EXPECT_EQ(done["oom_killed"], true) << done.dump();
  EXPECT_NE(done["reason"].get<std::string>().find("memory"), std::string::npos) << done.dump();
  EXPECT_EQ(Logs(id).find("survived"), std::string::npos);
  EXPECT_FALSE(ContainerExists(id, done["epoch"].get<int64_t>()));
}

// Found by a review: on cgroup v1 the container's cgroups were made below the job's path in the
// memory hierarchy, which is not the job's path in the others where the agent's own cgroup differs
// between hierarchies (as on this kind of machine): its CPU time landed outside the job's cpu
// cgroup and its processes outside the job's freezer. Now one path serves every hierarchy.
TEST_F(Containers, ItsProcessesAreInTheJobsCgroupInEveryHierarchy) {
  StartAgent("alpha");
  if (NodeField("alpha", "limits") != "cgroup-v1") {
    GTEST_SKIP() << "not cgroup v1 here: " << NodeField("alpha", "limits");
  }
  const int64_t id = Submit({{"argv", {"cat", "/proc/self/cgroup"}}, {"gpus", 1}});
  WaitFor(id, "SUCCEEDED");
  // The job's cgroups as the agent made them (and limits, measures, freezes them), one per
  // hierarchy; the container's path in each hierarchy must lie below one of them.
  const agent::CgroupLimits cgroups =
      agent::CgroupLimits::Detect("", agent::CgroupLimits::InstanceTag((dir_ / "alpha").string()));
  const std::vector<std::string> dirs = cgroups.JobDirs(id);
  const std::string job = "/gpufleet-job-" + std::to_string(id);
  std::istringstream lines(Logs(id));
  int checked = 0;
  // Where each v1 hierarchy is mounted, by controller ("cpu" -> "/sys/fs/cgroup/cpu").
  std::map<std::string, std::string> mounted;
  std::ifstream mountinfo("/proc/self/mountinfo");
  for (std::string m; std::getline(mountinfo, m);) {
    std::istringstream fields(m);
    std::string mount_id, parent, dev, root, point, type, source, options;
    fields >> mount_id >> parent >> dev >> root >> point;
    const std::size_t dash = m.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream after(m.substr(dash + 3));
    after >> type >> source >> options;
    if (type != "cgroup") continue;
    std::istringstream names(options);
    for (std::string name; std::getline(names, name, ',');) mounted[name] = point;
  }
  for (std::string line; std::getline(lines, line);) {
    for (const char* controller : {"cpu", "memory", "freezer", "pids"}) {
      const std::size_t colon = line.find(':');
      const std::size_t colon2 = line.find(':', colon + 1);
      if (colon2 == std::string::npos) continue;
      std::istringstream names(line.substr(colon + 1, colon2 - colon - 1));
      bool names_it = false;
      for (std::string name; std::getline(names, name, ',');) names_it |= name == controller;
      if (!names_it || mounted.count(controller) == 0) continue;
      const std::size_t at = line.find(job + "/");
      ASSERT_NE(at, std::string::npos) << "outside the job's cgroup: " << line;
      const std::string dir =
          mounted[controller] + line.substr(colon2 + 1, at + job.size() - colon2 - 1);
      EXPECT_NE(std::find(dirs.begin(), dirs.end(), dir), dirs.end())
          << "the container's " << controller << " cgroup is below " << dir
          << ", not the job's cgroup of that hierarchy";
      ++checked;
    }
  }
  EXPECT_GE(checked, 2) << Logs(id);
}

TEST_F(Containers, CancelStopsItWithinTheGracePeriod) {
  StartAgent("alpha");
  const int64_t id = Submit(
      {{"argv",
        {"sh", "-c", "trap 'echo got-sigterm; exit 0' TERM; echo started; while true; do sleep 0.1; done"}},
       {"gpus", 1}});
  const json running = WaitFor(id, "RUNNING");
  ASSERT_TRUE(WaitUntil([&] { return Logs(id).find("started") != std::string::npos; }, 20));
  const auto asked = std::chrono::steady_clock::now();
  auto r = Http(alice_).Post("/v1/jobs/" + std::to_string(id) + "/cancel", "", "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  const json done = WaitFor(id, "CANCELLED", 15);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  EXPECT_LT(took, 1.0 + 4.0) << "grace 1 s, plus heartbeats and podman's own stop";
  EXPECT_TRUE(WaitUntil([&] { return Logs(id).find("got-sigterm") != std::string::npos; }, 5))
      << "SIGTERM reached the job inside the container: " << Logs(id);
  EXPECT_TRUE(WaitUntil([&] { return !ContainerExists(id, running["epoch"].get<int64_t>()); }, 10));
}

TEST_F(Containers, AJobIgnoringSigtermIsKilledAfterTheGraceAndItsContainerRemoved) {
  StartAgent("alpha");
  const int64_t id = Submit(
      {{"argv", {"sh", "-c", "trap '' TERM; echo started; while true; do sleep 0.1; done"}},
       {"gpus", 1}});
  const json running = WaitFor(id, "RUNNING");
  ASSERT_TRUE(WaitUntil([&] { return Logs(id).find("started") != std::string::npos; }, 20));
  auto r = Http(alice_).Post("/v1/jobs/" + std::to_string(id) + "/cancel", "", "application/json");
  ASSERT_TRUE(r && r->status == 200);
  // Killing the shim's group would have killed the shim and left the container running; its
  // container is removed instead, and the shim records the end.
  WaitFor(id, "CANCELLED", 20);
  EXPECT_TRUE(WaitUntil([&] { return !ContainerExists(id, running["epoch"].get<int64_t>()); }, 10));
  EXPECT_TRUE(e2e::Sh("pgrep -f 'while true; do slee[p] 0.1' >/dev/null").second != 0)
      << "nothing of the job runs on";
}

TEST_F(Containers, AMountSourceTheUserCannotReachOrThatPassesASymlinkFailsTheJob) {
  StartAgent("alpha");
  // Root's private directory under an allowed prefix: the root runtime could mount it, the
  // job's account could not read it.
  std::filesystem::create_directories(dir_ / "data" / "private" / "inner");
  std::filesystem::permissions(dir_ / "data" / "private", std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace);
  std::filesystem::create_directory_symlink("/etc", dir_ / "data" / "link");
  std::filesystem::permissions(dir_ / "data", std::filesystem::perms::others_read |
                                                  std::filesystem::perms::others_exec,
                               std::filesystem::perm_options::add);
  const int64_t hidden = Submit({{"argv", {"ls", "/x"}},
                                 {"gpus", 1},
                                 {"mounts", {(dir_ / "data" / "private" / "inner").string() + ":/x:ro"}}});
  json done = WaitFor(hidden, "FAILED");
  EXPECT_NE(done["reason"].get<std::string>().find("not reachable by account nobody"),
            std::string::npos)
      << done.dump();
  const int64_t linked = Submit(
      {{"argv", {"ls", "/x"}}, {"gpus", 1}, {"mounts", {(dir_ / "data" / "link").string() + ":/x:ro"}}});
  done = WaitFor(linked, "FAILED");
  EXPECT_NE(done["reason"].get<std::string>().find("symbolic link"), std::string::npos)
      << done.dump();
  EXPECT_EQ(Logs(linked).find("passwd"), std::string::npos) << "/etc was never mounted";
}

// Found by a review: the mount check opened the source as the job's account, but the root
// runtime was then given the path as text, so renaming a directory of it to a symbolic link in
// between had the runtime mount whatever the link named (a root-only directory here). The shim
// now mounts the very directory it checked and gives the runtime that. A stand-in runtime does
// the swap itself, deterministically, then lists what it was told to mount.
TEST_F(Containers, AMountSourceSwappedForALinkAfterItsCheckStillMountsWhatWasChecked) {
  namespace fs = std::filesystem;
  const fs::path data = dir_ / "data", secret = data / "secret", mine = data / "mine";
  fs::create_directories(secret / "inner");
  std::ofstream(secret / "inner" / "secret-flag") << "root only\n";
  fs::permissions(secret, fs::perms::owner_all, fs::perm_options::replace);
  fs::create_directories(mine);
  std::ofstream(mine / "original-file") << "alice's\n";
  ASSERT_EQ(::chown(mine.c_str(), 65534, 65534), 0);  // nobody, alice's account
  fs::permissions(data, fs::perms::others_read | fs::perms::others_exec, fs::perm_options::add);
  const fs::path runtime = dir_ / "swapping-runtime.sh";
  std::ofstream(runtime) << "#!/bin/sh\n"
                            "case \" $* \" in *\" run \"*) ;; *) exit 0;; esac\n"
                            "for a in \"$@\"; do case \"$a\" in --mount=type=bind,source=*)\n"
                            "  src=${a#--mount=type=bind,source=}; src=${src%%,*};; esac; done\n"
                         << "mv '" << mine.string() << "' '" << mine.string() << ".away'\n"
                         << "ln -s '" << (secret / "inner").string() << "' '" << mine.string()
                         << "'\n"
                         << "echo \"mounting $src:\"; ls \"$src\"\n";
  fs::permissions(runtime, fs::perms::owner_all);
  StartAgent("alpha", {"--container-runtime", runtime.string()});
  const int64_t id =
      Submit({{"argv", {"ls", "/x"}}, {"gpus", 1}, {"mounts", {mine.string() + ":/x:ro"}}});
  const json done = WaitFor(id, "SUCCEEDED");
  const std::string log = Logs(id);
  EXPECT_NE(log.find("original-file"), std::string::npos) << done.dump() << "\n" << log;
  EXPECT_EQ(log.find("secret-flag"), std::string::npos)
      << "the swapped-in link was mounted: " << log;
  // What the shim mounted for the runtime is gone with the job.
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "alpha", ec)) {
    EXPECT_EQ(entry.path().filename().string().find(".mount"), std::string::npos)
        << entry.path() << " outlived its job";
  }
}

TEST_F(Containers, AnAgentKilledWithSigkillReadoptsItAndItsLogGoesOn) {
  StartAgent("alpha");
  const int64_t id = Submit(
      {{"argv", {"sh", "-c", "for i in $(seq 1 40); do echo tick $i; sleep 0.2; done"}},
       {"gpus", 1}});
  WaitFor(id, "RUNNING");
  ASSERT_TRUE(WaitUntil([&] { return Logs(id).find("tick 3") != std::string::npos; }, 20));
  kill(agents_["alpha"], SIGKILL);
  waitpid(agents_["alpha"], nullptr, 0);
  agents_.erase("alpha");
  std::this_thread::sleep_for(std::chrono::seconds(2));  // the container runs on meanwhile
  StartAgent("alpha");
  const json done = WaitFor(id, "SUCCEEDED", 40);
  const std::string log = Logs(id);
  EXPECT_NE(log.find("tick 40"), std::string::npos) << log;
  EXPECT_EQ(log.find("tick 41"), std::string::npos);
  EXPECT_FALSE(ContainerExists(id, done["epoch"].get<int64_t>()));
}

TEST_F(Containers, ATwoNodeContainerJobGetsItsDistributedVariablesOnBothNodes) {
  StartAgent("alpha");
  StartAgent("beta");
  const int64_t id = Submit(
      {{"argv",
        {"sh", "-c",
         "echo rank=$NODE_RANK world=$WORLD_SIZE master=$MASTER_ADDR:$MASTER_PORT "
         "cvd=$CUDA_VISIBLE_DEVICES"}},
       {"gpus", 2},
       {"nodes", 2}});
  const json done = WaitFor(id, "SUCCEEDED");
  EXPECT_EQ(done["node"], "alpha,beta");
  const std::string port = std::to_string(29500 + id % 1000);
  const std::string log = Logs(id);  // rank 0's; rank 1's is kept beside it by the controller
  EXPECT_NE(log.find("rank=0 world=4 master=127.0.0.1:" + port + " cvd=0,1"), std::string::npos)
      << log;
  std::string rank1;
  WaitUntil(
      [&] {
        rank1 = Slurp((dir_ / "ctl" / "logs" / (std::to_string(id) + ".rank1.log")).string());
        return rank1.find("rank=1") != std::string::npos;
      },
      10);
  EXPECT_NE(rank1.find("rank=1 world=4 master=127.0.0.1:" + port + " cvd=0,1"), std::string::npos)
      << rank1;
  EXPECT_FALSE(ContainerExists(id, done["epoch"].get<int64_t>()));
  EXPECT_FALSE(e2e::Sh("podman container exists gpufleet-job-" + std::to_string(id) + "-" +
                       std::to_string(done["epoch"].get<int64_t>()) + "-1")
                   .second == 0);
}

TEST_F(Containers, ADisallowedImageOrMountIsRefusedNamingTheField) {
  auto [status, answer] = Post({{"argv", {"true"}}, {"image", "docker.io/library/evil:1"}});
  EXPECT_EQ(status, 403) << answer.dump();
  EXPECT_EQ(answer["field"], "image");
  std::tie(status, answer) = Post({{"argv", {"true"}}, {"image", kImage}, {"mounts", {"/etc:/host-etc"}}});
  EXPECT_EQ(status, 403) << answer.dump();
  EXPECT_EQ(answer["field"], "mounts");
  std::tie(status, answer) = Post({{"argv", {"true"}},
                                   {"image", kImage},
                                   {"mounts", {(dir_ / "data").string() + "/../../etc:/x"}}});
  EXPECT_EQ(status, 400) << answer.dump();
  EXPECT_EQ(answer["field"], "mounts");
  std::tie(status, answer) = Post({{"argv", {"true"}}, {"image", "--privileged"}});
  EXPECT_EQ(status, 400) << answer.dump();
  EXPECT_EQ(answer["field"], "image");
  std::tie(status, answer) = Post({{"argv", {"true"}}, {"mounts", {"/data:/data"}}});
  EXPECT_EQ(status, 400) << "mounts without an image: " << answer.dump();
  // The CLI says the same.
  const std::string said = e2e::Sh("GPUFLEET_SERVER='" + url_ + "' GPUFLEET_TOKEN='" + alice_ + "' '" +
                                   GPUFLEET_BINARY + "' submit --image " + kImage +
                                   " --mount /etc:/x -- true 2>&1")
                               .first;
  EXPECT_NE(said.find("mounts"), std::string::npos) << said;
  EXPECT_NE(said.find("not under a directory the admin allows"), std::string::npos) << said;
  EXPECT_TRUE(Get("/v1/jobs?user=alice").empty()) << "nothing was queued";
}

}  // namespace
}  // namespace gpufleet

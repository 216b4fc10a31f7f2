// Issue 12, section 1: the live controller and the simulator make the same decisions. A small
// trace is replayed through the `Controller` (its own node, a fake executor that "runs" each job
// for its trace duration, a fake clock driven second by second) and through `RunTimeSim` on the
// same one-node cluster, with the same queue and placement policies; their decision logs
// ("time,start,job,node:gpus") must be equal.
//
// Where they must differ: preemption. The simulator applies a preemption at once (the victim's
// GPUs are free in the same pass); the controller stops the victim (SIGTERM, grace, SIGKILL) and
// starts the waiting job only once the victim has ended, a pass later at the soonest: "rounds".
// The mixed trace below happens to preempt nothing under las-qssf (no job passes its first class,
// 2 GPU-hours, while others wait); ReplayParityPreemption names the difference on one that does.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "controller/controller.h"
#include "core/gpu_catalog.h"
#include "sched/placement_policy.h"
#include "sched/policy_registry.h"
#include "sim/time_sim.h"
#include "store/store.h"

namespace gpufleet::controller {
namespace {

constexpr int kGpus = 8;
constexpr const char* kModel = "G2";
// The controller's clock reads kEpochS + the trace's second (0 means "not set" in job records).
constexpr int64_t kEpochS = 1'700'000'000;

// Runs each job for the duration in its argv ("run SECONDS ID") on the test's clock.
class FakeExecutor final : public NodeExecutor {
 public:
  int64_t now_s = 0;
  std::string log;  // "time,start,job,0:mask" lines, as the simulator's decision log
  core::Result<Started> Start(const store::JobRecord& job, const net::EnvList&,
                              const std::string&) override {
    core::GpuMask mask = 0;
    for (int g : job.gpu_indices) mask |= core::GpuMask{1} << g;
    log += std::to_string(now_s) + ",start," + std::to_string(job.id) + ",0:" +
           std::to_string(mask) + "\n";
    ends_[job.id] = now_s + std::stoll(job.argv.at(1));
    return Started{1000 + job.id, 1};
  }
  bool Adopt(const store::JobRecord&, const std::string&) override { return false; }
  bool Stop(int64_t job_id, double) override {
    stops_.insert(job_id);
    return ends_.count(job_id) > 0;
  }
  std::vector<Exit> Poll() override {
    std::vector<Exit> out;
    for (auto it = ends_.begin(); it != ends_.end();) {
      const bool stopped = stops_.count(it->first) > 0;
      if (it->second <= now_s || stopped) {
        out.push_back({it->first, stopped ? 143 : 0, stopped, {}});
        stops_.erase(it->first);
        it = ends_.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  }

 private:
  std::map<int64_t, int64_t> ends_;
  std::set<int64_t> stops_;
};

// A small trace with contention: 40 jobs of 1-8 GPUs arriving over 10 minutes on 8 GPUs, run
// times 20 s to 10 min, from a fixed formula (no randomness to seed).
std::vector<sim::TraceJob> Trace() {
  std::vector<sim::TraceJob> jobs;
  const int gpus[] = {1, 2, 1, 4, 1, 8, 2, 1, 4, 2};
  for (int i = 0; i < 40; ++i) {
    sim::TraceJob t;
    t.id = i + 1;  // the store numbers submitted jobs 1, 2, ... in this order too
    t.submit_s = (i * 37) % 600 / 15 * 15;
    t.num_gpus = gpus[i % 10];
    t.duration_s = 20 + (i * 97) % 580;
    t.vc = "default";
    jobs.push_back(t);
  }
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const auto& a, const auto& b) { return a.submit_s < b.submit_s; });
  for (std::size_t k = 0; k < jobs.size(); ++k) jobs[k].id = static_cast<int64_t>(k + 1);
  return jobs;
}

// What each job's run time was predicted to be when it arrived (policies that use predictions).
using Predictions = std::map<int64_t, double>;

std::string SimulatorLog(const std::vector<sim::TraceJob>& jobs, const std::string& policy,
                         Predictions& predicted, int& preemptions) {
  sim::ClusterSpec cluster;
  cluster.name = "one-node";
  core::NodeSpec node;
  node.name = "local";
  node.num_gpus = kGpus;
  // A model of the reference speed (1.0): jobs run their trace durations, as the fake executor's.
  node.model = core::GpuCatalog::Builtin().Find(kModel).value();
  node.cpu_milli = 1 << 30;
  node.memory_mib = int64_t{1} << 40;
  cluster.nodes.push_back(node);
  auto queue = sched::MakeQueuePolicy(policy);
  auto placement = sched::MakePlacementPolicy("gpupacking");
  sim::TimeSimConfig config;
  config.allow_spread = false;  // the controller never spreads a job over more nodes than asked
  auto result = sim::RunTimeSim(jobs, cluster, *queue, *placement, config, true);
  EXPECT_TRUE(result.ok()) << result.error();
  if (result.ok()) {
    for (const sim::JobOutcome& o : result.value().jobs) {
      if (!std::isnan(o.predicted_s)) predicted[o.id] = o.predicted_s;
    }
  }
  std::string starts;  // only the start lines: the controller logs no finishes
  std::istringstream lines(result.ok() ? result.value().decision_log : "");
  for (std::string line; std::getline(lines, line);) {
    if (line.find(",start,") != std::string::npos) starts += line + "\n";
    if (line.find(",preempt,") != std::string::npos) ++preemptions;
  }
  return starts;
}

std::string ControllerLog(const std::vector<sim::TraceJob>& jobs, const std::string& policy,
                          bool predicts, Predictions& predicted, int64_t* preempted = nullptr) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("gpufleet-parity-" + std::to_string(::getpid()) + policy);
  std::filesystem::remove_all(dir);
  auto store = store::OpenSqliteStore(dir.string());
  EXPECT_TRUE(store.ok());
  if (!store) return "";
  FakeExecutor executor;
  ControllerOptions options;
  options.data_dir = dir.string();
  options.gpus = kGpus;
  options.gpu_model = kModel;
  options.queue_policy = policy;
  options.placement_policy = "gpupacking";
  options.clock = [&executor] { return (kEpochS + executor.now_s) * 1000; };
  auto made = Controller::Create(*store.value(), &executor, options);
  EXPECT_TRUE(made.ok()) << made.error();
  if (!made) return "";
  Controller& ctl = *made.value();
  EXPECT_TRUE(ctl.Recover(kEpochS * 1000).ok());
  std::size_t next = 0;
  for (int64_t t = 0;
       t <= 20000 &&
       ctl.Stats().finished - ctl.Stats().preempted < static_cast<int64_t>(jobs.size());
       ++t) {
    executor.now_s = t;
    for (; next < jobs.size() && jobs[next].submit_s == t; ++next) {
      store::JobRecord job;
      job.user = "u";
      job.name = "job" + std::to_string(jobs[next].id);  // names and commands unique: the
      job.argv = {"run", std::to_string(jobs[next].duration_s), job.name};  // user's classes
      job.gpus = jobs[next].num_gpus;                // predict as the queue's (one user)
      job.submit_ms = (kEpochS + t) * 1000;
      auto id = ctl.Submit(job);
      EXPECT_TRUE(id.ok() && id.value() == jobs[next].id) << (id ? "" : id.error());
    }
    ctl.RunOnce((kEpochS + t) * 1000);
    for (std::size_t k = 0; predicts && k < next; ++k) {
      if (predicted.count(jobs[k].id) > 0) continue;
      if (auto p = ctl.Prediction(jobs[k].id)) predicted[jobs[k].id] = p->seconds;
    }
    ctl.RunOnce((kEpochS + t) * 1000);
  }
  EXPECT_EQ(ctl.Stats().finished - ctl.Stats().preempted, static_cast<int64_t>(jobs.size()));
  if (preempted != nullptr) *preempted = ctl.Stats().preempted;
  made.value().reset();
  std::filesystem::remove_all(dir);
  return executor.log;
}

class ReplayParity : public ::testing::TestWithParam<const char*> {};

TEST_P(ReplayParity, TheControllerStartsTheSameJobsAtTheSameTimesOnTheSameGpus) {
  const std::vector<sim::TraceJob> jobs = Trace();
  Predictions sim_predicted, live_predicted;
  int preemptions = 0;
  const std::string simulated = SimulatorLog(jobs, GetParam(), sim_predicted, preemptions);
  std::printf("%s: %d preemptions in replay\n", GetParam(), preemptions);
  const std::string live = ControllerLog(jobs, GetParam(), !sim_predicted.empty(), live_predicted);
  EXPECT_EQ(std::count(simulated.begin(), simulated.end(), '\n'), 40);
  EXPECT_EQ(live_predicted, sim_predicted) << "run-time predictions at arrival";
  EXPECT_EQ(live, simulated);
}

// Where they differ by design: a preemption. A holds all 8 GPUs; at 1,000 s it has 8,000
// GPU-seconds, past las-qssf's first class (7,200), and B (class 0) arrives. The simulator preempts
// A and starts B in one pass. The controller stops A (SIGTERM, then SIGKILL after the grace) and
// starts B in a later pass, once A has ended: here the same second, because the fake executor's
// jobs stop at once and the test runs two passes a second; a real job's checkpoint grace delays B
// by up to `--stop-grace` (docs/cluster.md, "Preemption", "Same decisions as in replay"). A runs
// again after B: the simulator resumes A's remaining work (plus its restart overhead), the fake
// executor runs it whole again, so what follows A's second start is not compared.
TEST(ReplayParityPreemption, TheControllerPreemptsInRoundsWhereTheSimulatorPreemptsAtOnce) {
  std::vector<sim::TraceJob> jobs(2);
  jobs[0].id = 1;
  jobs[0].num_gpus = kGpus;
  jobs[0].duration_s = 3000;
  jobs[0].vc = "default";
  jobs[1].id = 2;
  jobs[1].submit_s = 1000;
  jobs[1].num_gpus = kGpus;
  jobs[1].duration_s = 100;
  jobs[1].vc = "default";
  Predictions sim_predicted, live_predicted;
  int preemptions = 0;
  const std::string simulated = SimulatorLog(jobs, "las-qssf", sim_predicted, preemptions);
  int64_t live_preempted = 0;
  const std::string live = ControllerLog(jobs, "las-qssf", true, live_predicted, &live_preempted);
  EXPECT_EQ(preemptions, 1);
  EXPECT_EQ(live_preempted, 1);
  const std::string expected = "0,start,1,0:255\n1000,start,2,0:255\n1100,start,1,0:255\n";
  EXPECT_EQ(simulated, expected);
  EXPECT_EQ(live, expected);
}

INSTANTIATE_TEST_SUITE_P(Policies, ReplayParity,
                         ::testing::Values("fifo", "priority-backfill", "las-qssf"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
                           return name;
                         });

}  // namespace
}  // namespace gpufleet::controller

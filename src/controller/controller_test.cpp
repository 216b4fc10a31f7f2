// The controller's own unit tests: passes and heartbeats driven by hand over a fake clock, with
// fake agents (heartbeats built here) and a store in a temporary directory. Each test takes
// milliseconds; the process tests in tests/ cover the same paths end to end.
#include "controller/controller.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "controller/fake_agent.h"
#include "controller/store_write_lock.h"
#include "store/store.h"

namespace gpufleet::controller {
namespace {

constexpr int64_t kStartMs = 1'700'000'000'000;

class ControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpufleet-controller-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    auto store = store::OpenSqliteStore(dir_.string());
    ASSERT_TRUE(store.ok()) << store.error();
    store_ = std::move(store).value();
  }
  void TearDown() override {
    ctl_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  Controller& Make(ControllerOptions options = {}) {
    options.data_dir = dir_.string();
    options.lease_ms = 10000;
    options.clock = [this] { return now_ms_; };
    auto made = Controller::Create(*store_, options);
    EXPECT_TRUE(made.ok()) << made.error();
    ctl_ = std::move(made).value();
    EXPECT_TRUE(ctl_->Recover(now_ms_).ok());
    return *ctl_;
  }
  int64_t Submit(int gpus, int64_t time_limit_s = 0, bool restartable = false) {
    store::JobRecord job;
    job.user = "ada";
    job.argv = {"train"};
    job.gpus = gpus;
    job.time_limit_s = time_limit_s;
    job.restartable = restartable;
    auto id = ctl_->Submit(job);
    EXPECT_TRUE(id.ok()) << id.error();
    return id.ok() ? id.value() : 0;
  }
  // A job of user ada running `train` on `gpus` GPUs (or a `gpu_milli` share of one).
  static store::JobRecord NewJob(int gpus, int gpu_milli = 1000) {
    store::JobRecord job;
    job.user = "ada";
    job.argv = {"train"};
    job.gpus = gpus;
    job.gpu_milli = gpu_milli;
    return job;
  }
  // A 1-GPU job started on `agent` (already known), then `seconds` of running: its id.
  int64_t StartAndRun(FakeAgent& agent, int seconds) {
    const int64_t id = Submit(1);
    Step({&agent});
    EXPECT_EQ(Job(id).state, store::JobState::kRunning);
    RunFor(agent, seconds);
    return id;
  }
  // An elastic job of 1..4 GPUs started on `agent` (already known, 2 GPUs): its id, running on
  // both of them.
  int64_t StartElasticOnTwo(FakeAgent& agent) {
    store::JobRecord elastic = NewJob(4);
    elastic.min_gpus = 1;
    auto submitted = ctl_->Submit(elastic);
    EXPECT_TRUE(submitted.ok()) << submitted.error();
    const int64_t id = submitted.ok() ? submitted.value() : 0;
    Step({&agent});
    EXPECT_EQ(Job(id).state, store::JobState::kRunning);
    EXPECT_EQ(Job(id).gpu_indices.size(), 2u);
    return id;
  }
  // A restartable 4-GPU job that ran on `agent` (known), brought `bytes` of log and waits again,
  // its agent silent past the lease: its id.
  int64_t RequeuedAfterLogging(FakeAgent& agent, int bytes) {
    const int64_t id = Submit(4, 0, /*restartable=*/true);
    Step({&agent});
    EXPECT_TRUE(agent.Runs(id));
    agent.Log(id, std::string(static_cast<std::size_t>(bytes), 'x'));
    Step({&agent});
    EXPECT_EQ(agent.LogAcked(id), bytes);
    now_ms_ += 10001;
    ctl_->RunOnce(now_ms_);
    EXPECT_EQ(Job(id).state, store::JobState::kPending);
    return id;
  }
  // A controller whose users may each keep 2,500 bytes of argv and env in the store.
  Controller& MakeByteCapped() {
    ControllerOptions options;
    options.max_job_bytes_per_user = 2500;
    return Make(options);
  }
  // ada's job whose argv is 1,000 bytes.
  static store::JobRecord KilobyteJob() {
    store::JobRecord job = NewJob(1);
    job.argv = {std::string(1000, 'a')};
    return job;
  }
  // `seconds` of the clock in 5 s steps, each a pass and beats of `agent`.
  void RunFor(FakeAgent& agent, int seconds) {
    for (int s = 0; s < seconds; s += 5) {
      now_ms_ += 5'000;
      Step({&agent});
    }
  }
  store::JobRecord Job(int64_t id) {
    auto job = store_->GetJob(id);
    EXPECT_TRUE(job.ok() && job.value().has_value());
    return job.ok() && job.value() ? *job.value() : store::JobRecord{};
  }
  // Runs `statement` on the store's database from a second connection, as another process would.
  void Sql(const char* statement) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ / "gpufleet.db").string().c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    EXPECT_EQ(sqlite3_exec(db, statement, nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  // A pass, then a beat of each agent: what the pass placed starts and is reported running.
  void Step(std::initializer_list<FakeAgent*> agents) {
    ctl_->RunOnce(now_ms_);
    for (FakeAgent* a : agents) ASSERT_TRUE(a->Beat(*ctl_, now_ms_).ok());
    for (FakeAgent* a : agents) ASSERT_TRUE(a->Beat(*ctl_, now_ms_).ok());
  }

  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Controller> ctl_;
  int64_t now_ms_ = kStartMs;
};

TEST_F(ControllerTest, AJobRunsOnAnAgentAndSucceedsWhenItReportsExitZero) {
  Controller& ctl = Make();
  FakeAgent a("a");
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  const int64_t id = Submit(2);
  Step({&a});
  EXPECT_TRUE(a.Runs(id));
  EXPECT_EQ(Job(id).state, store::JobState::kRunning);
  EXPECT_EQ(Job(id).node, "a");
  EXPECT_EQ(Job(id).gpu_indices.size(), 2u);
  a.End(id, 0);
  Step({&a});
  EXPECT_EQ(Job(id).state, store::JobState::kSucceeded);
  EXPECT_FALSE(a.Holds(id)) << "a settled job is no longer listed, so the agent forgets it";
}

// Running jobs' logs were never held to the user's log quota (only ended jobs' were swept), so a
// user's many chatty jobs could fill the controller's disk until they ended.
TEST_F(ControllerTest, RunningJobsLogsStopGrowingHereAtTheirUsersQuota) {
  ControllerOptions options;
  options.log_quota_bytes = 1000;
  Controller& ctl = Make(options);
  FakeAgent a("a");
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  const int64_t first = Submit(1), second = Submit(1);
  store::JobRecord bobs_job = NewJob(1);
  bobs_job.user = "bob";
  auto bobs = ctl.Submit(bobs_job);
  ASSERT_TRUE(bobs.ok()) << bobs.error();
  Step({&a});
  ASSERT_TRUE(a.Runs(first) && a.Runs(second) && a.Runs(bobs.value()));
  a.Log(first, std::string(600, 'x'));
  Step({&a});
  EXPECT_EQ(a.LogAcked(first), 600);
  a.Log(second, std::string(600, 'y'));
  a.Log(bobs.value(), std::string(900, 'z'));
  Step({&a});
  EXPECT_EQ(a.LogAcked(second), 400) << "ada's running jobs hold what fits in her 1000 bytes";
  EXPECT_EQ(ctl.Logs().Size(second, 0), 400);
  EXPECT_GT(ctl.Stats().log_chunks_held_back, 0);
  EXPECT_TRUE(a.LogHeldBack(second)) << "the agent is told to wait rather than resend at once";
  EXPECT_EQ(a.LogAcked(bobs.value()), 900) << "another user's quota is their own";
  a.End(first, 0);
  Step({&a});
  ASSERT_EQ(Job(first).state, store::JobState::kSucceeded);
  Step({&a});
  EXPECT_EQ(a.LogAcked(second), 600) << "the ended job's log left the running jobs' count";
  EXPECT_FALSE(a.LogHeldBack(second));
  EXPECT_EQ(ctl.Logs().Size(second, 0), 600);
  // A job that ends with its log cut at the quota settles at once: the rest is not waited for.
  a.Log(second, std::string(2000, 'y'));
  Step({&a});
  EXPECT_EQ(a.LogAcked(second), 1000);
  a.End(second, 0);
  Step({&a});
  EXPECT_EQ(Job(second).state, store::JobState::kSucceeded);
  bool told = false;
  const auto history = store_->Events(second);
  ASSERT_TRUE(history.ok()) << history.error();
  const std::vector<store::JobEvent>& events = history.value();
  for (const store::JobEvent& e : events) {
    told = told ||
           (e.what == "log cut" &&
            e.detail.find("the last 1600 bytes of its log were not kept") != std::string::npos);
  }
  EXPECT_TRUE(told) << "its history says why its log stops";
  EXPECT_EQ(ctl.Logs().Size(second, 0), 1000) << "the log itself is as shipped";
}

// Found by a review: a store made anew beside an old data dir numbers jobs from 1 again, and the
// new job 1's log was appended to the old job 1's (another user's, perhaps): `gpufleet logs 1`
// showed the old output, and before any chunk came, the old job's removal note.
TEST_F(ControllerTest, AJobsFirstRunStartsWithNoLogOfAnEarlierJobOfTheSameId) {
  Controller& ctl = Make();
  FakeAgent a("a");
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  // What jobs of the next ids under the earlier store left: logs and a removal note.
  for (int64_t earlier : {1, 2}) {
    ASSERT_TRUE(ctl.Logs().Append(earlier, 3, "a rank the new job does not have\n"));
    ASSERT_TRUE(ctl.Logs().Append(earlier, 0, "the earlier job's secret\n"));
    ASSERT_TRUE(ctl.Logs().Remove(JobLogs::Held{earlier, 0, {}}, "[gpufleet] an old note"));
    ASSERT_TRUE(ctl.Logs().Append(earlier, 0, "the earlier job's secret\n"));
  }
  const int64_t waiting = Submit(1);  // shown as it waits, before it runs
  ASSERT_EQ(waiting, 1);
  EXPECT_EQ(ctl.Logs().Size(waiting, 0), 0) << "gone at the submit";
  EXPECT_EQ(ctl.Logs().Size(waiting, 3), 0) << "with the ranks the new job does not have";
  EXPECT_FALSE(ctl.Logs().RemovedNote(waiting).has_value());
  const int64_t id = Submit(1);
  ASSERT_EQ(id, 2);
  // Written again after the submit (a standby's folder, say), it is gone at the first run too.
  ASSERT_TRUE(ctl.Logs().Append(id, 0, "the earlier job's secret\n"));
  ASSERT_TRUE(ctl.Logs().Remove(JobLogs::Held{id, 0, {}}, "[gpufleet] an old note"));
  ASSERT_TRUE(ctl.Logs().Append(id, 0, "the earlier job's secret\n"));
  Step({&a});
  ASSERT_TRUE(a.Runs(id));
  EXPECT_EQ(ctl.Logs().Size(id, 0), 0) << "the earlier job's log is gone before the job runs";
  EXPECT_FALSE(ctl.Logs().RemovedNote(id).has_value());
  a.Log(id, "its own output\n");
  Step({&a});
  std::ifstream in(ctl.Logs().Path(id, 0));
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(log, "its own output\n");
}

// Carried from a review: removing a gang that ran twice must take every rank's log of both runs,
// not rank 0's or the last run's only.
TEST_F(ControllerTest, RemovingARequeuedGangTakesEveryRanksLogOfEveryRun) {
  Controller& ctl = Make();
  FakeAgent a("a"), b("b"), c("c"), d("d");
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  ASSERT_TRUE(b.Beat(ctl, now_ms_).ok());
  store::JobRecord gang = NewJob(4);
  gang.nodes = 2;
  gang.restartable = true;
  const auto id = ctl.Submit(gang);
  ASSERT_TRUE(id.ok()) << id.error();
  Step({&a, &b});
  ASSERT_TRUE(a.Runs(id.value()) && b.Runs(id.value()));
  a.Log(id.value(), "first run, one rank\n");
  b.Log(id.value(), "first run, the other\n");
  Step({&a, &b});
  // a and b go silent: the gang goes back to the queue, then runs on c and d.
  now_ms_ += 10001;
  ctl.RunOnce(now_ms_);
  ASSERT_EQ(Job(id.value()).state, store::JobState::kPending);
  ASSERT_TRUE(c.Beat(ctl, now_ms_).ok());
  ASSERT_TRUE(d.Beat(ctl, now_ms_).ok());
  Step({&c, &d});
  ASSERT_TRUE(c.Runs(id.value()) && d.Runs(id.value()));
  c.Log(id.value(), "second run\n");
  d.Log(id.value(), "second run\n");
  Step({&c, &d});
  c.End(id.value(), 0);
  d.End(id.value(), 0);
  Step({&c, &d});
  ASSERT_EQ(Job(id.value()).state, store::JobState::kSucceeded);
  const JobLogs::Held before = ctl.Logs().Of(id.value(), 2, 2);
  ASSERT_EQ(before.files.size(), 4U) << "two ranks, two runs";
  const auto removed = ctl.RemoveEndedJob(id.value(), now_ms_);
  ASSERT_TRUE(removed.ok()) << removed.error();
  for (const std::string& file : before.files) {
    EXPECT_FALSE(std::filesystem::exists(file)) << file;
  }
  EXPECT_TRUE(ctl.Logs().Scan().empty());
}

// Found by a review: a gang that only spot nodes within the spend cap could hold was accepted
// when it was not restartable, though the autoscaler never puts such a job on spot: it waited for
// good.
TEST_F(ControllerTest, AGangOnlySpotNodesCouldHoldIsRefusedUnlessRestartable) {
  ControllerOptions options;
  const core::NodeSpec node{"g", 32000, 128 * 1024, 8, 0};
  options.growth_nodes = {node, node};              // the cap buys two at the spot price
  options.growth_nodes_on_demand.emplace(1, node);  // and one on demand
  Make(options);
  store::JobRecord gang = NewJob(8);  // 8 GPUs on each of 2 nodes
  gang.nodes = 2;
  auto refused = ctl_->Submit(gang);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.failure().field, "nodes") << refused.error();
  gang.restartable = true;
  EXPECT_TRUE(ctl_->Submit(gang).ok());
  store::JobRecord one = NewJob(8);
  EXPECT_TRUE(ctl_->Submit(one).ok()) << "one node on demand is within the cap";
}

// Found by a review: a requeued job's earlier run's log left the running jobs' count, so each
// restart could bring another quota's worth of log, until the job ended.
TEST_F(ControllerTest, ARequeuedJobsEarlierLogStillCountsUntilItEnds) {
  for (const bool restart : {false, true}) {
    TearDown();
    SetUp();
    ControllerOptions options;
    options.log_quota_bytes = 1000;
    Make(options);
    FakeAgent a("a"), b("b");
    ASSERT_TRUE(a.Beat(*ctl_, now_ms_).ok());
    const int64_t id = RequeuedAfterLogging(a, 700);  // then it runs on b
    if (restart) Make(options);  // a restart of the controller while it waits counts it too
    ASSERT_TRUE(b.Beat(*ctl_, now_ms_).ok());
    Step({&b});
    ASSERT_TRUE(b.Runs(id));
    b.Log(id, std::string(700, 'y'));
    Step({&b});
    EXPECT_EQ(b.LogAcked(id), 300) << "700 bytes of its first run count against the 1000"
                                   << (restart ? ", after a restart" : "");
    EXPECT_TRUE(b.LogHeldBack(id));
    // Once it ends, none of its logs count: another job of ada's gets the whole quota.
    b.End(id, 0);
    Step({&b});
    ASSERT_EQ(Job(id).state, store::JobState::kSucceeded);
    const int64_t next = Submit(1);
    Step({&b});
    ASSERT_TRUE(b.Runs(next));
    b.Log(next, std::string(1000, 'z'));
    Step({&b});
    EXPECT_EQ(b.LogAcked(next), 1000);
  }
}

// A requeued job cancelled while it waits takes its earlier run's log out of the count.
TEST_F(ControllerTest, ACancelledRequeuedJobsEarlierLogStopsCounting) {
  ControllerOptions options;
  options.log_quota_bytes = 1000;
  Make(options);
  FakeAgent a("a"), b("b");
  ASSERT_TRUE(a.Beat(*ctl_, now_ms_).ok());
  const int64_t id = RequeuedAfterLogging(a, 900);
  ASSERT_TRUE(ctl_->Cancel(id, now_ms_).ok());
  ASSERT_TRUE(b.Beat(*ctl_, now_ms_).ok());
  const int64_t next = Submit(1);
  Step({&b});
  ASSERT_TRUE(b.Runs(next));
  b.Log(next, std::string(1000, 'z'));
  Step({&b});
  EXPECT_EQ(b.LogAcked(next), 1000) << "the cancelled job's 900 bytes no longer count";
}

// Carried from a review: a requeued job kept its last run's start, so once cancelled while
// scheduled on another node its GPU history showed that node's GPUs, used by others, from then.
TEST_F(ControllerTest, ARequeuedJobCancelledBeforeItRunsAgainShowsNoOtherNodesGpuHistory) {
  Make();
  FakeAgent a("a"), b("b");
  ASSERT_TRUE(a.Beat(*ctl_, now_ms_).ok());
  const int64_t id = RequeuedAfterLogging(a, 10);
  EXPECT_EQ(Job(id).start_ms, 0) << "waiting again: not started";
  EXPECT_EQ(Job(id).end_ms, 0);
  b.sm_pct = 55;  // whatever runs on b, not this job
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(b.Beat(*ctl_, now_ms_).ok());
    now_ms_ += 5000;
  }
  ctl_->RunOnce(now_ms_);
  ASSERT_EQ(Job(id).state, store::JobState::kScheduled);
  ASSERT_EQ(Job(id).node, "b");
  ASSERT_TRUE(ctl_->Cancel(id, now_ms_).ok());
  Step({&b});  // b is told to stop it at once
  const store::JobRecord cancelled = Job(id);
  ASSERT_EQ(cancelled.state, store::JobState::kCancelled);
  // b saw it only as it was stopped: nothing of b's earlier samples is the job's.
  for (const Controller::GpuSeries& g : ctl_->JobGpuSeries(cancelled)) {
    for (int64_t t : g.series.t_ms) EXPECT_GE(t, now_ms_) << "b's GPU " << g.index;
  }
}

// Found by a review: held heartbeats were capped for all nodes together only, so one node sending
// 16 long-poll beats at once held every slot and most agent workers.
TEST_F(ControllerTest, OneNodesSecondLongPollIsAnsweredAtOnce) {
  Controller& ctl = Make();
  FakeAgent a("a");
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  net::Heartbeat beat;
  beat.node = "a";
  beat.gpus = 4;
  beat.gpu_model = "G2";
  auto first = ctl.Heartbeat(beat, now_ms_);  // its epoch, for the beats below
  ASSERT_TRUE(first.ok()) << first.error();
  beat.node_epoch = first.value().node_epoch;
  beat.wait_ms = 2000;
  std::thread held([&] { (void)ctl.Heartbeat(beat, now_ms_); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the first one is held by now
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(ctl.Heartbeat(beat, now_ms_).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000))
      << "a second beat of the same node was held too";
  held.join();
}

// Found by a review: each change of a GPU's health reason was an audit-log row, so a node
// flapping its GPUs' reasons grew the audit log without bound.
TEST_F(ControllerTest, ANodeFlappingItsGpusHealthRecordsAtMostTheCapAnHour) {
  Controller& ctl = Make();
  FakeAgent a("a");
  a.sm_pct = 0;
  for (int k = 0; k < 100; ++k) {
    a.unhealthy_reason = k % 2 == 0 ? "" : "xid " + std::to_string(k);
    ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
    now_ms_ += 1000;
  }
  const auto recorded = store_->Events(0);
  ASSERT_TRUE(recorded.ok());
  EXPECT_EQ(recorded.value().size(), 64u) << "4 GPUs x 99 changes, capped";
  // The hour's count comes at the first beat after it, whether anything changes then or not,
  // with what is unhealthy at its end (the last change, xid 99, was one of those left out).
  now_ms_ += 3'600'000;
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  auto later = store_->Events(0).value();
  ASSERT_EQ(later.size(), 65u);
  EXPECT_EQ(later[64].what, "GPU health changes left out");
  EXPECT_NE(later[64].detail.find("332 more"), std::string::npos) << later[64].detail;
  EXPECT_NE(later[64].detail.find("unhealthy at its end: GPU 0 (xid 99), GPU 1 (xid 99)"),
            std::string::npos)
      << later[64].detail;
  a.unhealthy_reason = "xid 999";
  ASSERT_TRUE(a.Beat(ctl, now_ms_ + 1000).ok());
  later = store_->Events(0).value();
  ASSERT_GE(later.size(), 66u);
  EXPECT_EQ(later[65].what, "GPU drained") << "a new hour records again";
}

// An end the store could not record is not forgotten: before, the controller dropped the write
// and, the job gone from its memory, never wrote it again, so the store kept it RUNNING for good.
TEST_F(ControllerTest, AnEndTheStoreCouldNotRecordIsRecordedOnceTheStoreIsBack) {
  Controller& ctl = Make();
  FakeAgent a("a"), b("b");
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  ASSERT_TRUE(b.Beat(ctl, now_ms_).ok());
  const int64_t id = Submit(1);
  Step({&a, &b});
  ASSERT_EQ(Job(id).state, store::JobState::kRunning);
  FakeAgent& runner = a.Runs(id) ? a : b;
  FakeAgent& other = a.Runs(id) ? b : a;
  runner.End(id, 3);
  {
    StoreWriteLock lock(dir_);
    const auto beat = runner.Beat(ctl, now_ms_);
    ASSERT_FALSE(beat.ok()) << "the agent is told to retry: the end is not durable yet";
    EXPECT_EQ(Job(id).state, store::JobState::kRunning);
    // The other node is answered, at once (the store rests after a failure): a node without
    // replies would stop its restartable jobs.
    const auto started = std::chrono::steady_clock::now();
    EXPECT_TRUE(other.Beat(ctl, now_ms_).ok());
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
    EXPECT_FALSE(runner.Beat(ctl, now_ms_).ok()) << "still unrecorded, still retry";
  }
  now_ms_ += 1000;
  // A cancel reads the store, so it records what waits first: it finds the job ended.
  const auto cancelled = ctl.Cancel(id, now_ms_);
  ASSERT_TRUE(cancelled.ok()) << cancelled.error();
  EXPECT_EQ(cancelled.value(), store::JobState::kFailed);
  EXPECT_EQ(Job(id).state, store::JobState::kFailed);
  EXPECT_EQ(Job(id).exit_code.value_or(-1), 3);
  ASSERT_TRUE(runner.Beat(ctl, now_ms_).ok());
  EXPECT_FALSE(runner.Holds(id)) << "recorded, the end is now told to the agent";
  // The GPU it freed is placed again, and the store agrees.
  const int64_t next = Submit(4);
  Step({&a, &b});
  EXPECT_TRUE(a.Runs(next) || b.Runs(next));
  EXPECT_EQ(Job(next).state, store::JobState::kRunning);
}

// A restartable job found started but never placed is ended LOST and requeued on recovery, in one
// commit. Before, two: a stop between them (here, a trigger refusing the second) left it LOST for
// good, since a later recovery lists only live jobs.
TEST_F(ControllerTest, RecoveryEndsAndRequeuesAnUnplacedRestartableJobInOneCommit) {
  store::JobRecord job;
  job.user = "ada";
  job.argv = {"train"};
  job.gpus = 1;
  job.restartable = true;
  auto added = store_->AddJob(job);
  ASSERT_TRUE(added.ok()) << added.error();
  const int64_t id = added.value().id;
  ASSERT_TRUE(store_->Transition(id, store::JobState::kPending, store::JobState::kScheduled, {},
                                 now_ms_)
                  .ok());
  Sql("CREATE TRIGGER stop_before_requeue BEFORE UPDATE OF state ON jobs "
      "WHEN OLD.state = 'LOST' AND NEW.state = 'PENDING' BEGIN SELECT RAISE(ABORT, 'stopped'); "
      "END");
  {
    ControllerOptions options;
    options.data_dir = dir_.string();
    options.clock = [this] { return now_ms_; };
    auto first = Controller::Create(*store_, options);
    ASSERT_TRUE(first.ok()) << first.error();
    EXPECT_FALSE(first.value()->Recover(now_ms_).ok());
  }
  EXPECT_NE(Job(id).state, store::JobState::kLost) << "ended without its requeue";
  Sql("DROP TRIGGER stop_before_requeue");
  now_ms_ += 1000;
  Make();  // the next start recovers it
  EXPECT_EQ(Job(id).state, store::JobState::kPending);
}

TEST_F(ControllerTest, AJobThatCannotFitIsExplainedByTheRunningJobWhoseEndFreesIt) {
  Controller& ctl = Make();
  FakeAgent a("a");  // 4 GPUs
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  const int64_t big = Submit(3, /*time_limit_s=*/2400);
  Step({&a});
  ASSERT_TRUE(a.Runs(big));
  const int64_t waiting = Submit(2);
  for (int second = 0; second < 60; second += 5) {  // a minute into its 40; beats keep the lease
    now_ms_ += 5000;
    Step({&a});
  }
  EXPECT_FALSE(a.Runs(waiting));
  const std::vector<Controller::QueueExplanation> why = ctl.ExplainQueue(now_ms_);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_EQ(why[0].why.id, waiting);
  EXPECT_EQ(why[0].why.position, 1);
  EXPECT_EQ(why[0].user, "ada");
  EXPECT_EQ(why[0].why.kind, sched::WaitKind::kNoFitNow);
  EXPECT_EQ(why[0].why.fits_after_job, big);
  EXPECT_EQ(why[0].why.fits_after_s, 2340);
  EXPECT_EQ(why[0].why.reason,
            "needs 2 GPUs on one node: no node has 2 free now (at most 1); "
            "would fit after job " +
                std::to_string(big) + " ends (time limit in 39 min)");
  // Explaining changes nothing: the next pass still places nothing, and then the job starts
  // once the big one ends.
  a.End(big, 0);
  Step({&a});
  Step({&a});
  EXPECT_TRUE(a.Runs(waiting));
  // (An explanation less than kExplainFloorMs old is answered again whatever changed.)
  EXPECT_TRUE(ctl.ExplainQueue(now_ms_ + Controller::kExplainFloorMs).empty());
}

// Found by a review: each explanation took the controller's lock for a whole scheduling pass, so
// a user asking in a loop from many connections kept heartbeats waiting until nodes were lost.
// One made less than a second ago with nothing changed since is answered again.
TEST_F(ControllerTest, AnExplanationIsReusedUntilTheQueueChangesOrASecondHasGone) {
  Controller& ctl = Make();
  FakeAgent a("a");
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  const int64_t big = Submit(3, /*time_limit_s=*/2400);
  Step({&a});
  const int64_t waiting = Submit(2);
  Step({&a});
  const int64_t made = ctl.ExplanationsMade();
  ASSERT_EQ(ctl.ExplainQueue(now_ms_).size(), 1u);
  for (int k = 0; k < 50; ++k) EXPECT_EQ(ctl.ExplainQueue(now_ms_ + k * 10)[0].why.id, waiting);
  EXPECT_EQ(ctl.ExplanationsMade(), made + 1) << "made once, answered 50 more times";
  ctl.ExplainQueue(now_ms_ + Controller::kExplainReuseMs);
  EXPECT_EQ(ctl.ExplanationsMade(), made + 2) << "a second later: made anew";
  // Passes that change nothing (the loop runs one every 50 ms) do not void it: before, a user
  // asking in a loop had the queue explained anew about every 50 ms.
  Step({&a});
  Step({&a});
  ctl.ExplainQueue(now_ms_ + Controller::kExplainReuseMs + Controller::kExplainFloorMs);
  EXPECT_EQ(ctl.ExplanationsMade(), made + 2) << "idle passes since: answered again";

  a.End(big, 0);
  Step({&a});  // passes: the waiting job starts
  Step({&a});
  EXPECT_FALSE(ctl.ExplainQueue(now_ms_ + Controller::kExplainReuseMs + 100).empty())
      << "less than kExplainFloorMs later: the old answer, whatever changed";
  EXPECT_EQ(ctl.ExplanationsMade(), made + 2);
  EXPECT_TRUE(
      ctl.ExplainQueue(now_ms_ + Controller::kExplainReuseMs + Controller::kExplainFloorMs).empty())
      << "passes that started a job since: made anew, not the old answer";
  EXPECT_EQ(ctl.ExplanationsMade(), made + 3);
  // A drain changes what fits where: made anew once the floor has passed, with no pass between.
  ASSERT_TRUE(ctl.Drain("a", 3, "test", "admin").ok());
  ctl.ExplainQueue(now_ms_ + Controller::kExplainReuseMs + 2 * Controller::kExplainFloorMs);
  EXPECT_EQ(ctl.ExplanationsMade(), made + 4) << "a drain since: made anew";
}

// Before, any name was a queue with a fair share of its own: a user spreading jobs over made-up
// queues outweighed the admin's quotas and preempted another team's jobs.
TEST_F(ControllerTest, WhereQueuesAreDeclaredAJobForAnyOtherQueueIsRefusedNamingTheField) {
  ControllerOptions options;
  options.queue_weights = {{"teama", 1}, {"teamb", 2}};
  Controller& ctl = Make(options);
  store::JobRecord job = NewJob(1);
  job.queue = "x1";
  auto refused = ctl.Submit(job);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.failure().field, "queue");
  EXPECT_EQ(refused.failure().code, core::ErrorCode::kInvalid);
  EXPECT_NE(refused.error().find("teamb"), std::string::npos) << refused.error();
  for (const char* queue : {"teama", "teamb", "default"}) {
    job.queue = queue;
    EXPECT_TRUE(ctl.Submit(job).ok()) << queue;
  }
}

TEST_F(ControllerTest, WithoutDeclaredQueuesAnyQueueNameIsTaken) {
  Controller& ctl = Make();
  store::JobRecord job = NewJob(1);
  job.queue = "anything";
  EXPECT_TRUE(ctl.Submit(job).ok());
}

TEST_F(ControllerTest, ANonZeroExitFailsTheJobWithItsCode) {
  Controller& ctl = Make();
  FakeAgent a("a");
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  const int64_t id = Submit(1);
  Step({&a});
  a.End(id, 3);
  Step({&a});
  EXPECT_EQ(Job(id).state, store::JobState::kFailed);
  EXPECT_EQ(Job(id).exit_code.value_or(-1), 3);
}

TEST_F(ControllerTest, ASilentNodeIsLostAfterItsLeaseAndARestartableJobRunsElsewhere) {
  Controller& ctl = Make();
  FakeAgent a("a"), b("b");
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  const int64_t keep = Submit(4, 0, /*restartable=*/true);
  const int64_t lose = Submit(4, 0, /*restartable=*/false);
  Step({&a});
  ASSERT_TRUE(a.Runs(keep));
  ASSERT_TRUE(b.Beat(ctl, now_ms_).ok());
  Step({&a, &b});
  ASSERT_TRUE(b.Runs(lose));
  now_ms_ += 5000;
  ASSERT_TRUE(b.Beat(ctl, now_ms_).ok());
  ctl.RunOnce(now_ms_);
  EXPECT_EQ(Job(keep).state, store::JobState::kRunning) << "within the lease nothing happens";
  now_ms_ += 5001;  // a: silent for 10.001 s; b beat 5.001 s ago
  ctl.RunOnce(now_ms_);
  // The restartable job waits again; b is busy, so it is placed once b's job ends.
  EXPECT_EQ(Job(keep).state, store::JobState::kPending);
  EXPECT_NE(Job(keep).reason.find("node a missed its lease"), std::string::npos)
      << Job(keep).reason;
  EXPECT_EQ(Job(lose).state, store::JobState::kRunning);
  b.End(lose, 0);
  Step({&b});
  EXPECT_EQ(Job(lose).state, store::JobState::kSucceeded);
  Step({&b});
  EXPECT_TRUE(b.Runs(keep));
  EXPECT_EQ(Job(keep).node, "b");
  EXPECT_EQ(Job(keep).epoch, 2) << "a new placement, a new epoch";
  // a returns: it learns the new node epoch and is no longer given `keep` (fenced).
  auto back = a.Beat(ctl, now_ms_);
  ASSERT_TRUE(back.ok());
  for (const net::Assignment& x : back.value().assignments) EXPECT_NE(x.id, keep);
  EXPECT_FALSE(a.Holds(keep));
}

// And stays LOST for good. Found by a review: it could then be neither removed nor cancelled, so
// it weighed on its user's byte cap for good; it can be removed.
TEST_F(ControllerTest, ANonRestartableJobOnALostNodeEndsLostAndCanBeRemoved) {
  Controller& ctl = Make();
  FakeAgent a("a");
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  const int64_t id = Submit(1);
  Step({&a});
  now_ms_ += 10001;
  ctl.RunOnce(now_ms_);
  ASSERT_EQ(Job(id).state, store::JobState::kLost);
  const auto removed = ctl.RemoveEndedJob(id, now_ms_);
  ASSERT_TRUE(removed.ok()) << removed.error();
  EXPECT_TRUE(removed.value());
  EXPECT_FALSE(store_->GetJob(id).value().has_value());
}

TEST_F(ControllerTest, ATimeLimitStopsTheJobAndFailsIt) {
  Controller& ctl = Make();
  FakeAgent a("a");
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  const int64_t id = Submit(1, /*time_limit_s=*/30);
  Step({&a});
  for (int second = 5; second < 30; second += 5) {  // beats keep the node's lease
    now_ms_ += 5000;
    Step({&a});
    EXPECT_TRUE(a.Runs(id)) << "at " << second << " s";
  }
  now_ms_ += 5000;
  Step({&a});  // the pass stops it; the agent stops it and reports the stop
  ctl.RunOnce(now_ms_);
  EXPECT_EQ(Job(id).state, store::JobState::kFailed);
  EXPECT_EQ(Job(id).reason, "time limit of 30 s reached");
}

TEST_F(ControllerTest, CancelStopsARunningJobThroughItsAgent) {
  Controller& ctl = Make();
  FakeAgent a("a");
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  const int64_t id = Submit(1);
  Step({&a});
  auto state = ctl.Cancel(id, now_ms_);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state.value(), store::JobState::kRunning) << "cancelled once it has stopped";
  Step({&a});
  ctl.RunOnce(now_ms_);
  EXPECT_EQ(Job(id).state, store::JobState::kCancelled);
}

// A pass commits its starts with the controller's lock released: heartbeats and cancels go on
// meanwhile, no agent hears of a start before it is durable, and a cancel in that window wins.
TEST_F(ControllerTest, ThePassCommitsItsStartsWithoutTheLockAndNothingRunsBeforeTheCommit) {
  FakeAgent a("a");
  int64_t cancelled = 0;
  bool armed = true, beat_ok = false, heard_early = true;
  ControllerOptions options;
  options.start_commit_window = [&](bool committed) {
    if (!armed || committed) return;
    armed = false;
    // Neither call could take the controller's lock if the pass still held it.
    auto reply = a.Beat(*ctl_, now_ms_);
    beat_ok = reply.ok();
    heard_early = reply.ok() && !reply.value().assignments.empty();
    auto state = ctl_->Cancel(cancelled, now_ms_);
    EXPECT_TRUE(state.ok() && state.value() == store::JobState::kCancelled);
  };
  Controller& ctl = Make(options);
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  const int64_t kept = Submit(2);
  cancelled = Submit(2);
  ctl.RunOnce(now_ms_);
  EXPECT_TRUE(beat_ok);
  EXPECT_FALSE(heard_early) << "an agent heard of a start before it was committed";
  EXPECT_EQ(Job(kept).state, store::JobState::kScheduled);
  EXPECT_EQ(Job(cancelled).state, store::JobState::kCancelled);
  EXPECT_EQ(ctl.Stats().started, 1);
  EXPECT_GE(ctl.Stats().last_start_pass_ms, 0.0);
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  EXPECT_TRUE(a.Runs(kept));
  EXPECT_FALSE(a.Holds(cancelled));
  EXPECT_EQ(Job(kept).state, store::JobState::kRunning);
  // The cancelled start gave its 2 GPUs back: another 2-GPU job starts beside the kept one.
  const int64_t next = Submit(2);
  Step({&a});
  EXPECT_TRUE(a.Runs(next)) << "the cancelled start's GPUs were released";
}

// A burst of submits is taken into the queue over several passes, none lost, in submit order.
// A cancel that comes once the start is committed but before it launches stops the job as a
// started one: it never runs, and ends CANCELLED (never reported cancelled while it runs).
TEST_F(ControllerTest, ACancelAfterTheStartsCommitButBeforeTheirLaunchStopsTheJob) {
  int64_t id = 0;
  bool armed = true;
  std::optional<store::JobState> answered;
  ControllerOptions options;
  options.start_commit_window = [&](bool committed) {
    if (!armed || !committed) return;
    armed = false;
    auto state = ctl_->Cancel(id, now_ms_);
    ASSERT_TRUE(state.ok()) << state.error();
    answered = state.value();
  };
  Controller& ctl = Make(options);
  FakeAgent a("a");
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  id = Submit(1);
  ctl.RunOnce(now_ms_);
  ASSERT_TRUE(answered.has_value());
  EXPECT_EQ(*answered, store::JobState::kScheduled) << "cancelled once it has stopped";
  Step({&a});
  Step({&a});
  EXPECT_FALSE(a.Runs(id));
  EXPECT_EQ(Job(id).state, store::JobState::kCancelled);
}

TEST_F(ControllerTest, ABurstOfSubmitsIsQueuedOverSeveralPasses) {
  ControllerOptions options;
  options.max_arrivals_per_pass = 3;
  Controller& ctl = Make(options);
  std::vector<int64_t> ids;
  for (int k = 0; k < 7; ++k) ids.push_back(Submit(1));
  ctl.RunOnce(now_ms_);
  EXPECT_EQ(ctl.Stats().waiting, 3);
  ctl.RunOnce(now_ms_);
  EXPECT_EQ(ctl.Stats().waiting, 6);
  ctl.RunOnce(now_ms_);
  EXPECT_EQ(ctl.Stats().waiting, 7);
  FakeAgent a("a", 8);
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  Step({&a});
  for (int64_t id : ids) EXPECT_TRUE(a.Runs(id)) << id;
  // A job cancelled while it waits to be taken in never enters the queue.
  const int64_t first = Submit(8);
  const int64_t second = Submit(8);
  const int64_t third = Submit(8);
  const int64_t fourth = Submit(8);
  ctl.RunOnce(now_ms_);  // takes 3 of them; the GPUs are busy
  ASSERT_EQ(ctl.Cancel(fourth, now_ms_).value(), store::JobState::kCancelled);
  ctl.RunOnce(now_ms_);
  EXPECT_EQ(ctl.Stats().waiting, 3) << first << second << third;
  EXPECT_EQ(Job(fourth).state, store::JobState::kCancelled);
}

TEST_F(ControllerTest, ASubmitRetriedThenCancelledBeforeAnyPassIsNeverQueued) {
  // The retry puts the job in the inbox a second time; the cancel used to be matched to the
  // first entry only, and the second queued a CANCELLED job that no cancel could reach.
  Controller& ctl = Make();
  store::JobRecord job = NewJob(1);
  job.client_token = "t1";
  const int64_t id = ctl.Submit(job).value();
  job.argv = {"something", "else"};
  ASSERT_EQ(ctl.Submit(job).value(), id);
  ASSERT_EQ(ctl.Submit(job).value(), id);
  ASSERT_EQ(ctl.Cancel(id, now_ms_).value(), store::JobState::kCancelled);
  ctl.RunOnce(now_ms_);
  ctl.RunOnce(now_ms_);
  EXPECT_EQ(ctl.Stats().waiting, 0);
  FakeAgent a("a", 8);
  Step({&a});
  EXPECT_FALSE(a.Runs(id));
  EXPECT_EQ(Job(id).state, store::JobState::kCancelled);

  // Retried, taken in, then cancelled: the first submit's entry, arriving last, is not queued.
  store::JobRecord other = NewJob(1);
  other.client_token = "t2";
  const int64_t second = ctl.Submit(other).value();
  ASSERT_EQ(ctl.Submit(other).value(), second);
  ctl.RunOnce(now_ms_);
  EXPECT_EQ(ctl.Stats().waiting, 0);  // started on a
  EXPECT_TRUE(a.Beat(ctl, now_ms_).ok());
  EXPECT_TRUE(a.Runs(second));
  EXPECT_EQ(Job(second).argv, std::vector<std::string>{"train"});  // the stored job, once
}

// A submit whose commit went through but whose answer said it failed never reached the inbox;
// its retry must queue it, also when that job already takes the user to the cap (the retry was
// answered with the id, and the job waited unqueued until a restart).
TEST_F(ControllerTest, ARetryOfASubmitCommittedButNeverQueuedQueuesItEvenAtTheCap) {
  ControllerOptions options;
  options.max_live_jobs_per_user = 1;
  Controller& ctl = Make(options);
  store::JobRecord job = NewJob(1);
  job.client_token = "lost-answer";
  job.submit_ms = now_ms_;
  auto stored = store_->AddJob(job);  // committed; the controller never heard of it
  ASSERT_TRUE(stored.ok() && stored.value().added);
  auto again = ctl.Submit(job);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again.value(), stored.value().id);
  ctl.RunOnce(now_ms_);
  EXPECT_EQ(ctl.Stats().waiting, 1);
  FakeAgent a("a", 1);
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  Step({&a});
  EXPECT_TRUE(a.Runs(stored.value().id));
}

// Found by a review: within the write rate, one user submitting and cancelling in a loop added
// up to 512 KiB a job to the store for good (nothing capped ended jobs' argv and env).
TEST_F(ControllerTest, AUsersArgvAndEnvInTheStoreAreCappedUntilRetentionRemovesTheirJobs) {
  Controller& ctl = MakeByteCapped();
  store::JobRecord job = KilobyteJob();
  const auto first = ctl.Submit(job, /*within_cap=*/true);
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_TRUE(ctl.Cancel(first.value(), now_ms_).ok());  // ended: it still weighs
  job.client_token = "second";
  const auto second = ctl.Submit(job, true);
  ASSERT_TRUE(second.ok()) << second.error();
  job.client_token = "";
  const auto refused = ctl.Submit(job, true);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.failure().code, core::ErrorCode::kForbidden);
  EXPECT_EQ(refused.failure().field, "jobs");
  EXPECT_NE(refused.error().find("--max-job-bytes-per-user"), std::string::npos) << refused.error();
  // A retry of a submit that went through is that job, at the cap too.
  job.client_token = "second";
  const auto retry = ctl.Submit(job, true);
  ASSERT_TRUE(retry.ok()) << retry.error();
  EXPECT_EQ(retry.value(), second.value());
  job.client_token = "";
  // Other users, and admins (no cap), are not held back by ada's.
  store::JobRecord bobs = job;
  bobs.user = "bob";
  EXPECT_TRUE(ctl.Submit(bobs, true).ok());
  store::JobRecord admins = job;
  admins.argv = {"x"};
  EXPECT_TRUE(ctl.Submit(admins, /*within_cap=*/false).ok());
  // Retention removes the ended job. The store is counted again at most once a minute a user
  // (the count reads every job's texts): refused until then, then let through.
  ASSERT_EQ(store_->RemoveEndedJobs({first.value()}).value(), 1);
  EXPECT_FALSE(ctl.Submit(job, true).ok());
  now_ms_ += 61000;
  const auto after = ctl.Submit(job, true);
  EXPECT_TRUE(after.ok()) << after.error();
  EXPECT_FALSE(ctl.Submit(job, true).ok()) << "and the count goes on from the store's";
}

// Carried from a review: with the byte cap on by default, a user at it could only wait for the
// admin's retention. Removing an ended job of theirs makes room at once.
TEST_F(ControllerTest, RemovingAnEndedJobTakesItsLogsAndRowsAndMakesRoomUnderTheByteCap) {
  Controller& ctl = MakeByteCapped();
  store::JobRecord job = KilobyteJob();
  const auto first = ctl.Submit(job, /*within_cap=*/true);
  ASSERT_TRUE(first.ok()) << first.error();
  const auto second = ctl.Submit(job, true);
  ASSERT_TRUE(second.ok()) << second.error();
  ASSERT_FALSE(ctl.Submit(job, true).ok()) << "at the cap";
  const auto live = ctl.RemoveEndedJob(first.value(), now_ms_);
  ASSERT_FALSE(live.ok()) << "pending: not removed";
  EXPECT_EQ(live.failure().field, "state");
  EXPECT_EQ(Job(first.value()).state, store::JobState::kPending);
  ASSERT_TRUE(ctl.Cancel(first.value(), now_ms_).ok());
  ASSERT_TRUE(ctl.Logs().Append(first.value(), 0, "its output\n"));
  ASSERT_TRUE(ctl.Logs().Append(second.value(), 0, "the other's\n"));
  const auto removed = ctl.RemoveEndedJob(first.value(), now_ms_);
  ASSERT_TRUE(removed.ok()) << removed.error();
  EXPECT_TRUE(removed.value());
  EXPECT_FALSE(store_->GetJob(first.value()).value().has_value());
  EXPECT_TRUE(ctl.Logs().Of(first.value(), 1, 1).files.empty());
  EXPECT_EQ(ctl.Logs().Of(second.value(), 1, 1).files.size(), 1U) << "another job's log stays";
  EXPECT_TRUE(ctl.Submit(job, true).ok()) << "room made at once, not after a minute";
  const auto again = ctl.RemoveEndedJob(first.value(), now_ms_);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.failure().code, core::ErrorCode::kNotFound);
}

// Carried from a review: the ids of retried submits (and of jobs cancelled before a pass queued
// them) were kept for the controller's life, so a user retrying submits in a loop grew them for
// good. They are forgotten an hour after, when their entries have long arrived.
TEST_F(ControllerTest, RetriedSubmitsAreRememberedForAnHourNotForGood) {
  Controller& ctl = Make();
  store::JobRecord job = NewJob(1);
  job.client_token = "once";
  const auto first = ctl.Submit(job);
  ASSERT_TRUE(first.ok()) << first.error();
  const auto retry = ctl.Submit(job);  // its answer was lost: the same job, queued at most once
  ASSERT_TRUE(retry.ok()) << retry.error();
  EXPECT_EQ(retry.value(), first.value());
  EXPECT_EQ(ctl.Stats().unarrived_remembered, 1);
  ctl.RunOnce(now_ms_);
  EXPECT_EQ(ctl.Stats().waiting, 1) << "queued once";
  now_ms_ += 30 * 60'000;
  ctl.RunOnce(now_ms_);
  EXPECT_EQ(ctl.Stats().unarrived_remembered, 1);
  now_ms_ += 31 * 60'000;
  ctl.RunOnce(now_ms_);
  EXPECT_EQ(ctl.Stats().unarrived_remembered, 0);
  EXPECT_EQ(ctl.Stats().waiting, 1);
}

TEST_F(ControllerTest, AReportOfAnotherEpochIsIgnoredAndNotListedSoTheAgentStopsIt) {
  Controller& ctl = Make();
  FakeAgent a("a");
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  const int64_t id = Submit(1);
  Step({&a});
  FakeAgent stale("s");
  ASSERT_TRUE(stale.Beat(ctl, now_ms_).ok());
  stale.Pretend(id, 7);  // a placement the controller never made here
  auto reply = stale.Beat(ctl, now_ms_);
  ASSERT_TRUE(reply.ok());
  EXPECT_TRUE(reply.value().assignments.empty());
  EXPECT_FALSE(stale.Holds(id));
  EXPECT_EQ(Job(id).state, store::JobState::kRunning);
  EXPECT_EQ(Job(id).node, "a");
}

TEST_F(ControllerTest, OnlyTheInProcessAgentMayNameTheLocalNodeAndItHearsOfItsWork) {
  ControllerOptions options;
  options.local_node = "local";
  int news = 0;
  options.on_local_node_change = [&news] { ++news; };
  Controller& ctl = Make(options);
  FakeAgent impostor("local");
  auto refused = impostor.Beat(ctl, now_ms_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.failure().field, "node");
  FakeAgent local("local");
  ASSERT_TRUE(local.Beat(ctl, now_ms_, /*in_process=*/true).ok());
  EXPECT_EQ(news, 0);
  const int64_t id = Submit(1);
  ctl.RunOnce(now_ms_);
  EXPECT_GE(news, 1) << "told when a job is placed on it";
  ASSERT_TRUE(local.Beat(ctl, now_ms_, true).ok());
  EXPECT_TRUE(local.Runs(id));
  const std::vector<NodeView> nodes = ctl.Nodes();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_TRUE(nodes[0].local);
}

TEST_F(ControllerTest, ANodesGpuLinksFromItsHeartbeatSteerATwoGpuJobToAnNvLinkedPair) {
  Controller& ctl = Make();
  FakeAgent a("a", 4);
  // NVLink joins 0-3 and 1-2 only; every pair shares a socket.
  std::vector<std::vector<int>> nvlinks(4, std::vector<int>(4, 0));
  std::vector<std::vector<int>> pcie(4, std::vector<int>(4, 1));
  nvlinks[0][3] = nvlinks[3][0] = nvlinks[1][2] = nvlinks[2][1] = 2;
  for (int g = 0; g < 4; ++g) pcie[g][g] = core::kMaxPcieClass;
  auto links = core::MakeGpuLinks(nvlinks, pcie, 4);
  ASSERT_TRUE(links.ok()) << links.error();
  a.links = links.value();
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  const int64_t id = Submit(2);
  Step({&a});
  const std::vector<int> gpus = Job(id).gpu_indices;
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_TRUE((gpus == std::vector<int>{0, 3}) || (gpus == std::vector<int>{1, 2}))
      << gpus[0] << "," << gpus[1];
}

TEST_F(ControllerTest, AJobThatCanNeverFitIsRefusedAtSubmitNamingTheField) {
  Controller& ctl = Make();
  FakeAgent a("a", 4);
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  store::JobRecord big;
  big.user = "ada";
  big.argv = {"train"};
  big.gpus = 5;
  auto refused = ctl.Submit(big);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.failure().field, "gpus");
  EXPECT_EQ(refused.failure().code, core::ErrorCode::kInfeasible);
  big.gpus = 4;
  big.nodes = 2;
  refused = ctl.Submit(big);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.failure().field, "nodes");
}

// Before any node joined, a submit cannot be checked against the nodes. A gang that then turns out
// to be larger than the cluster stays pending (an admin may add nodes) but holds nothing back: the
// default policy's backfill reservation went to it and idled the cluster for good.
TEST_F(ControllerTest, AGangAcceptedBeforeAnyNodeJoinedHoldsNothingBackOnceTheyDo) {
  Controller& ctl = Make();
  store::JobRecord gang = NewJob(8);
  gang.nodes = 2;
  auto accepted = ctl.Submit(gang);
  ASSERT_TRUE(accepted.ok()) << accepted.error();
  FakeAgent a("a", 4);
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  Step({&a});
  const int64_t small = Submit(1);
  Step({&a});
  EXPECT_EQ(Job(small).state, store::JobState::kRunning);
  EXPECT_EQ(Job(accepted.value()).state, store::JobState::kPending);
}

// Found by a review: after a restart, a running job's rank on a node not heard from yet is held
// by that node's blocker, not by the job; the job was still handed to the scheduler as running,
// and the queue explanation (or a preemption, shrink or grow) released its rank there: a failed
// check aborted the controller, again at every restart while the node stayed away.
TEST_F(ControllerTest, ARankOnANodeNotYetBackIsNeverReleasedByAPassOrAnExplanation) {
  Make();
  FakeAgent a("a");  // 4 GPUs
  ASSERT_TRUE(a.Beat(*ctl_, now_ms_).ok());
  store::JobRecord one_job = NewJob(1);
  one_job.cpu_milli = 1000;
  const int64_t one = ctl_->Submit(one_job).value();
  Step({&a});
  ASSERT_TRUE(a.Runs(one));
  const int64_t four = Submit(4);  // waits: 3 GPUs free
  Step({&a});
  Make();  // a restart: node a not heard from yet
  now_ms_ += 1000;
  ctl_->RunOnce(now_ms_);
  const auto why = ctl_->ExplainQueue(now_ms_);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_EQ(why[0].why.id, four);
  EXPECT_EQ(Job(one).state, store::JobState::kRunning);
}

TEST_F(ControllerTest, AnElasticJobWithARankOnANodeNotYetBackIsNotGrown) {
  ControllerOptions options;
  options.elastic_grow_after_s = 0;
  Make(options);
  FakeAgent a("a", 2);
  ASSERT_TRUE(a.Beat(*ctl_, now_ms_).ok());
  store::JobRecord elastic = NewJob(4);
  elastic.min_gpus = 1;
  elastic.cpu_milli = 4000;
  const int64_t id = ctl_->Submit(elastic).value();
  Step({&a});
  ASSERT_EQ(Job(id).state, store::JobState::kRunning);
  Make(options);  // a restart; a has not beaten since
  FakeAgent b("b", 2);
  now_ms_ += 1000;
  ASSERT_TRUE(b.Beat(*ctl_, now_ms_).ok());
  ctl_->RunOnce(now_ms_);
  EXPECT_EQ(Job(id).state, store::JobState::kRunning);
  EXPECT_EQ(Job(id).gpu_indices.size(), 2u) << "not resized while a rank's node is away";
  // Once its node is back, it may grow into b's GPUs as usual.
  now_ms_ += 1000;
  Step({&a, &b});
  Step({&a, &b});
  EXPECT_NE(Job(id).state, store::JobState::kFailed);
}

TEST_F(ControllerTest, TheIdleReclaimWarnsThenStopsAJobWhoseGpusStayIdleAndLeavesABusyOneAlone) {
  ControllerOptions options;
  options.idle_timeout_ms = 10 * 60'000;
  Controller& ctl = Make(options);
  FakeAgent idle("idle", 1), busy("busy", 1);
  idle.sm_pct = 0;
  busy.sm_pct = 85;
  ASSERT_TRUE(idle.Beat(ctl, now_ms_).ok());
  ASSERT_TRUE(busy.Beat(ctl, now_ms_).ok());
  const int64_t a = Submit(1), b = Submit(1);
  Step({&idle, &busy});
  ASSERT_EQ(Job(a).state, store::JobState::kRunning);
  ASSERT_EQ(Job(b).state, store::JobState::kRunning);
  bool warned_before_stop = false;
  for (int s = 0; s < 11 * 60 && Job(a).state == store::JobState::kRunning; s += 5) {
    now_ms_ += 5'000;  // beats within the 10 s lease
    Step({&idle, &busy});
    auto events = store_->Events(Job(a).node == "idle" ? a : b);
    ASSERT_TRUE(events.ok());
    for (const store::JobEvent& e : events.value()) {
      if (e.what == "idle warning" && Job(a).state == store::JobState::kRunning) {
        warned_before_stop = true;
      }
    }
  }
  ctl.RunOnce(now_ms_);
  const int64_t idle_job = Job(a).node == "idle" ? a : b;
  const int64_t busy_job = idle_job == a ? b : a;
  EXPECT_TRUE(warned_before_stop);
  EXPECT_EQ(Job(idle_job).state, store::JobState::kCancelled);
  EXPECT_EQ(Job(idle_job).reason.rfind("idle for 10 min", 0), 0u) << Job(idle_job).reason;
  EXPECT_EQ(Job(busy_job).state, store::JobState::kRunning);
  EXPECT_EQ(ctl.Stats().idle_reclaims, 1);

  // The idle job's series is kept after it ended: about ten one-minute buckets at 0% SM.
  auto view = ctl.Usage(Job(idle_job));
  ASSERT_TRUE(view.ok()) << view.error();
  ASSERT_TRUE(view.value().has_value());
  EXPECT_FALSE(view.value()->live);
  EXPECT_GE(view.value()->usage.buckets.size(), 9u);
  EXPECT_EQ(view.value()->usage.buckets.front().sm_mean, 0);
  EXPECT_NEAR(view.value()->gpu_h_alloc, 10.0 / 60, 0.02);
  EXPECT_EQ(view.value()->gpu_h_used, 0);
  // The busy one's is live.
  auto live = ctl.Usage(Job(busy_job));
  ASSERT_TRUE(live.ok() && live.value().has_value());
  EXPECT_TRUE(live.value()->live);
  EXPECT_NEAR(live.value()->usage.buckets.back().sm_mean, 85, 0.5);
}

TEST_F(ControllerTest, AGpuShareJobIsChargedItsShareOfTheGpuTime) {
  Controller& ctl = Make();
  FakeAgent agent("a", 1);
  agent.sm_pct = 40;
  ASSERT_TRUE(agent.Beat(ctl, now_ms_).ok());
  auto id = ctl.Submit(NewJob(1, 500));
  ASSERT_TRUE(id.ok()) << id.error();
  Step({&agent});
  ASSERT_EQ(Job(id.value()).state, store::JobState::kRunning);
  RunFor(agent, 6 * 60);
  auto view = ctl.Usage(Job(id.value()));
  ASSERT_TRUE(view.ok() && view.value().has_value());
  // Six minutes on half a GPU: 0.05 GPU-h, not the whole GPU's 0.1.
  EXPECT_NEAR(view.value()->gpu_h_alloc, 0.5 * 6 / 60, 0.005);
  EXPECT_EQ(view.value()->facts.gpu_share, 0.5);
}

// Queues count what running jobs hold now: an elastic job started below its most counts the
// GPUs it runs on (before: its most), a GPU share its part of one GPU.
TEST_F(ControllerTest, QueuesCountTheGpusRunningJobsHoldNowAndSharesAsTheirPart) {
  Controller& ctl = Make();
  FakeAgent a("a", 2);
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  const int64_t elastic = StartElasticOnTwo(a);
  ASSERT_EQ(Job(elastic).gpu_indices.size(), 2u);
  FakeAgent b("b", 1);  // joins now: the only free GPU
  ASSERT_TRUE(b.Beat(ctl, now_ms_).ok());
  store::JobRecord share = NewJob(1, 250);
  share.queue = "serving";
  auto shared = ctl.Submit(share);
  ASSERT_TRUE(shared.ok()) << shared.error();
  Step({&a, &b});
  ASSERT_EQ(Job(shared.value()).state, store::JobState::kRunning);
  double elastic_held = -1, share_held = -1;
  for (const auto& q : ctl.Queues()) {
    if (q.name == "default") elastic_held = q.gpus_allocated;
    if (q.name == "serving") share_held = q.gpus_allocated;
  }
  EXPECT_EQ(elastic_held, 2.0);
  EXPECT_EQ(share_held, 0.25);
}

// What a learning queue policy (gittins) learns from a job that succeeded: every run at the GPUs
// it held. Before, the last run was counted at the GPUs the job asks, so an elastic job that
// finished below its most was learned as larger than the replay learns it.
TEST_F(ControllerTest, AnElasticJobsServiceCountsTheGpusItHeldNotItsMost) {
  Controller& ctl = Make();
  FakeAgent a("a", 2);
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  const int64_t id = StartElasticOnTwo(a);
  RunFor(a, 60);
  a.End(id, 0);
  Step({&a});
  const store::JobRecord done = Job(id);
  ASSERT_EQ(done.state, store::JobState::kSucceeded);
  ASSERT_EQ(done.gpu_indices.size(), 2u);  // it ran on both GPUs, not its most of 4
  EXPECT_EQ(Controller::ServiceAtSuccess(done, 60), 2 * 60.0);
  // Earlier runs (preemptions, resizes) count as their attained service.
  store::JobRecord resumed = done;
  resumed.attained_gpu_s = 500;
  EXPECT_EQ(Controller::ServiceAtSuccess(resumed, 60), 500 + 2 * 60.0);
  // A record with no placement counts its ask: 4 GPUs on each of 2 nodes.
  store::JobRecord unplaced = NewJob(4);
  unplaced.nodes = 2;
  EXPECT_EQ(Controller::ServiceAtSuccess(unplaced, 10), 8 * 10.0);
  // A placed CPU-only job held no GPU.
  store::JobRecord cpu_only = NewJob(0);
  cpu_only.placement = {store::RankPlacement{"a", {}}};
  EXPECT_EQ(Controller::ServiceAtSuccess(cpu_only, 10), 0.0);
}

// The live controller learns gittins' tables from the jobs that succeed, as the replay does, and a
// restarted one learns them again from the store's history: what they learned orders the queue.
// Here 2-GPU jobs have needed 1,200 GPU-seconds and 1-GPU jobs 30, so a 1-GPU job queued after a
// 2-GPU one goes first; with nothing learned the two are alike and the first queued goes first.
// 31 jobs of each size, so that both sizes have their own table: gittins rebuilds its tables at
// the 59th and the 62nd finished job, and a size's own table ranks its jobs once a rebuild counted
// 30 of them.
TEST_F(ControllerTest, GittinsLearnsFromJobsThatSucceededAndARestartLearnsItAgain) {
  ControllerOptions options;
  options.queue_policy = "gittins";
  FakeAgent a("a", 2);
  // Two jobs queued while a third holds both GPUs, then that one ends: which of the two starts?
  // True when the 2-GPU job, queued first, starts (and the 1-GPU one waits).
  auto two_gpu_job_goes_first = [&] {
    const int64_t blocker = Submit(2);
    Step({&a});
    EXPECT_EQ(Job(blocker).state, store::JobState::kRunning);
    const int64_t two = Submit(2);
    const int64_t one = Submit(1);
    Step({&a});
    EXPECT_EQ(Job(two).state, store::JobState::kPending);
    EXPECT_EQ(Job(one).state, store::JobState::kPending);
    // Cancelled rather than succeeded, so that it teaches gittins nothing itself.
    EXPECT_TRUE(ctl_->Cancel(blocker, now_ms_).ok());
    Step({&a});
    Step({&a});
    EXPECT_EQ(Job(blocker).state, store::JobState::kCancelled);
    const bool two_first = Job(two).state == store::JobState::kRunning;
    EXPECT_NE(two_first, Job(one).state == store::JobState::kRunning) << "exactly one starts";
    for (const int64_t id : {one, two}) EXPECT_TRUE(ctl_->Cancel(id, now_ms_).ok());
    Step({&a});
    Step({&a});
    EXPECT_EQ(Job(one).state, store::JobState::kCancelled);
    EXPECT_EQ(Job(two).state, store::JobState::kCancelled);
    return two_first;
  };
  Make(options);
  ASSERT_TRUE(a.Beat(*ctl_, now_ms_).ok());
  // Nothing learned yet, every job looks alike per GPU-second, and a gang's index is charged for
  // its width: the 1-GPU job goes first though it was queued second.
  EXPECT_FALSE(two_gpu_job_goes_first()) << "nothing learned yet: the narrower job first";
  // 31 jobs of each size succeed: 2 GPUs for 30 s each, then 1 GPU for 600 s each.
  for (const auto& [gpus, seconds] : {std::pair{2, 30}, std::pair{1, 600}}) {
    for (int i = 0; i < 31; ++i) {
      const int64_t id = Submit(gpus);
      Step({&a});
      ASSERT_EQ(Job(id).state, store::JobState::kRunning);
      now_ms_ += seconds * 1000;
      ASSERT_TRUE(a.Beat(*ctl_, now_ms_).ok());  // the lease holds across the jump
      a.End(id, 0);
      Step({&a});
      ASSERT_EQ(Job(id).state, store::JobState::kSucceeded);
    }
  }
  EXPECT_TRUE(two_gpu_job_goes_first()) << "learned: the job expected to need less goes first";
  // A new controller on the same store learns the same from the history it recovers.
  Make(options);
  ASSERT_TRUE(a.Beat(*ctl_, now_ms_).ok());
  EXPECT_TRUE(two_gpu_job_goes_first()) << "relearned after a restart";
}

// Stop writes every running job's usage series so far: before, the minutes since its last flush
// (up to usage_flush_ms) were lost, though a restarted controller resumes the series it finds.
TEST_F(ControllerTest, StopWritesEveryRunningJobsUsageSeriesSoFar) {
  Controller& ctl = Make();
  FakeAgent a("a", 1);
  a.sm_pct = 40;
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  const int64_t id = StartAndRun(a, 3 * 60);
  ctl.Stop();
  auto stored = store_->GetJobUsage(id);
  ASSERT_TRUE(stored.ok() && stored.value().has_value());
  EXPECT_NEAR(stored.value()->gpu_h_alloc, 3.0 / 60, 0.005) << "three minutes on one GPU";
  EXPECT_EQ(stored.value()->updated_ms, now_ms_);
}

// ...but not once another controller leads: the series is that one's to write.
TEST_F(ControllerTest, StopWritesNothingOnceAnotherControllerLeads) {
  bool leads = true;
  ControllerOptions options;
  options.may_act = [&leads] { return leads; };
  Controller& ctl = Make(options);
  FakeAgent a("a", 1);
  a.sm_pct = 40;
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  const int64_t id = StartAndRun(a, 3 * 60);
  auto before = store_->GetJobUsage(id);
  ASSERT_TRUE(before.ok() && before.value().has_value());
  leads = false;
  ctl.Stop();
  auto after = store_->GetJobUsage(id);
  ASSERT_TRUE(after.ok() && after.value().has_value());
  EXPECT_EQ(after.value()->updated_ms, before.value()->updated_ms);
  EXPECT_LT(after.value()->updated_ms, now_ms_);
}

// A state change the store refuses (its row moved on: here a second process cancelled the job) is
// counted and logged, and the store's state stands. Before, it was dropped without a word.
TEST_F(ControllerTest, AStateChangeTheStoreRefusesIsCountedAndTheStoresStateStands) {
  Controller& ctl = Make();
  FakeAgent a("a");
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  const int64_t id = Submit(1);
  Step({&a});
  ASSERT_EQ(Job(id).state, store::JobState::kRunning);
  const std::string cancel =
      "UPDATE jobs SET state='CANCELLED' WHERE id=" + std::to_string(id);
  Sql(cancel.c_str());
  a.End(id, 0);
  Step({&a});
  EXPECT_EQ(Job(id).state, store::JobState::kCancelled);
  EXPECT_EQ(ctl.Stats().writes_refused, 1);
}

// A restart sheds the nodes the autoscaler retired (before, every retired node stayed in the
// registry for good, and a fleet that scales up and down grew it without end); a lost node stays,
// since its agent may come back.
TEST_F(ControllerTest, ARestartLeavesRetiredNodesOut) {
  store::NodeRecord retired;
  retired.name = "gone";
  retired.gpus = 4;
  retired.gpu_model = "G2";
  retired.state = "RETIRED";
  store::NodeRecord lost = retired;
  lost.name = "away";
  lost.state = "LOST";
  ASSERT_TRUE(store_->PutNode(retired).ok());
  ASSERT_TRUE(store_->PutNode(lost).ok());
  Controller& ctl = Make();
  std::vector<std::string> names;
  for (const NodeView& n : ctl.Nodes()) names.push_back(n.name);
  EXPECT_EQ(names, std::vector<std::string>{"away"});
}

TEST_F(ControllerTest, AQueueMayBeExemptFromTheIdleReclaim) {
  ControllerOptions options;
  options.idle_timeout_ms = 5 * 60'000;
  options.queue_idle_timeout_ms["interactive"] = 0;
  Controller& ctl = Make(options);
  FakeAgent idle("idle", 1);
  idle.sm_pct = 0;
  ASSERT_TRUE(idle.Beat(ctl, now_ms_).ok());
  store::JobRecord job;
  job.user = "ada";
  job.argv = {"jupyter"};
  job.queue = "interactive";
  auto id = ctl.Submit(job);
  ASSERT_TRUE(id.ok());
  Step({&idle});
  for (int s = 0; s < 8 * 60; s += 5) {
    now_ms_ += 5'000;
    Step({&idle});
  }
  EXPECT_EQ(Job(id.value()).state, store::JobState::kRunning);
  EXPECT_EQ(ctl.Stats().idle_reclaims, 0);
}

TEST_F(ControllerTest, AGpuShareIsJudgedByItsOwnProcessesWhereTheNodeReadsThemElseByTheDevice) {
  ControllerOptions options;
  options.idle_timeout_ms = 2 * 60'000;
  Controller& ctl = Make(options);
  FakeAgent a("a", 1);
  a.sm_pct = 80;  // the device is busy
  ASSERT_TRUE(a.Beat(ctl, now_ms_).ok());
  store::JobRecord share;
  share.user = "ada";
  share.argv = {"train"};
  share.gpus = 1;
  share.gpu_milli = 500;
  auto id = ctl.Submit(share);
  ASSERT_TRUE(id.ok()) << id.error();
  Step({&a});
  ASSERT_EQ(Job(id.value()).state, store::JobState::kRunning);
  // No per-process figures: the busy device keeps it from being reclaimed.
  for (int s = 0; s < 3 * 60; s += 5) {
    now_ms_ += 5'000;
    Step({&a});
  }
  EXPECT_EQ(Job(id.value()).state, store::JobState::kRunning);
  // A full list without it (other processes may have pushed it out, some only claiming to be
  // jobs'): not known, so the busy device still stands in. It used to count as idle.
  a.job_sm.clear();
  for (std::size_t k = 0; k < net::GpuFigure::kMaxJobsPerFigure; ++k) {
    a.job_sm.emplace_back(id.value() + 1000 + static_cast<int64_t>(k), 1.0);
  }
  for (int s = 0; s < 3 * 60; s += 5) {
    now_ms_ += 5'000;
    Step({&a});
  }
  EXPECT_EQ(Job(id.value()).state, store::JobState::kRunning);
  // Per-process figures that list only another job: its own share is idle, and it is reclaimed.
  a.job_sm = {{id.value() + 1000, 80.0}};
  for (int s = 0; s < 3 * 60 && Job(id.value()).state == store::JobState::kRunning; s += 5) {
    now_ms_ += 5'000;
    Step({&a});
  }
  ctl.RunOnce(now_ms_);
  EXPECT_EQ(Job(id.value()).state, store::JobState::kCancelled);
}

}  // namespace
}  // namespace gpufleet::controller

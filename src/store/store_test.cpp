#include "store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "store/job_columns.h"
#include "store/pg_test_server.h"

namespace gpufleet::store {
namespace {

// The PostgreSQL server every PostgreSQL test of this binary shares: started on first use (by
// the first such test), stopped when the binary exits. Each test gets a database of its own.
struct SharedPg {
  std::unique_ptr<PgTestServer> server;
  std::string error;         // why there is no server
  bool unavailable = false;  // PostgreSQL is not installed here (else: it failed to start)
  std::mutex mutex;
  int databases = 0;
};

SharedPg& Pg() {
  static SharedPg* shared = [] {
    auto* pg = new SharedPg;
    if (auto why = PgTestServer::Unavailable()) {
      pg->error = *why;
      pg->unavailable = true;
      return pg;
    }
    // No fsync: the tests check what the store does, not how fast the disk syncs (a commit is
    // still written before it is confirmed, so it survives a crash of the server).
    PgTestServer::Options options;
    options.fsync = false;
    options.settings = {{"shared_buffers", "'16MB'"}};
    pg->server = std::make_unique<PgTestServer>(options);
    if (!pg->server->Start(&pg->error)) pg->server.reset();
    return pg;
  }();
  return *shared;
}

// The server's destructor stops it and removes its directory when the binary exits (the shared
// state itself is never destroyed, so that no test's thread outlives it).
struct PgCleanup {
  ~PgCleanup() {
    // Only when a test started it.
    if (started) Pg().server.reset();
  }
  bool started = false;
};
PgCleanup pg_cleanup;

// Under CI (CI set and not "false"), a missing PostgreSQL fails the PostgreSQL tests.
bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && *ci != '\0' && std::string(ci) != "false";
}

template <typename T>
void ExpectFenced(const core::Result<T>& result, const std::string& what) {
  ASSERT_FALSE(result.ok()) << what << " succeeded on a store whose leadership has passed on";
  EXPECT_EQ(result.failure().code, core::ErrorCode::kUnavailable) << what << ": "
                                                                   << result.error();
  EXPECT_NE(result.error().find("fenced"), std::string::npos) << what << ": " << result.error();
}

// What the tests share: a store of either backend, and jobs to put in it.
class StoreFixture : public ::testing::Test {
 protected:
  // Opens a fresh store of `backend` ("sqlite": a data directory of the test's own;
  // "postgresql": a database of the test's own on the shared server) into store_, and, when
  // `lead`, takes the lease (every write of a PostgreSQL store is fenced by it). Skips (or
  // fails, under CI) when PostgreSQL is not installed.
  void OpenBackend(const std::string& backend, bool lead) {
    backend_ = backend;
    if (backend == "sqlite") {
      std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
      std::replace(name.begin(), name.end(), '/', '-');
      dir_ = std::filesystem::temp_directory_path() /
             ("gpufleet-store-" + std::to_string(::getpid()) + "-" + name);
      std::filesystem::remove_all(dir_);
    } else {
      SharedPg& pg = Pg();
      std::lock_guard<std::mutex> lock(pg.mutex);
      if (pg.server == nullptr) {
        if (!pg.unavailable) FAIL() << "PostgreSQL did not start: " << pg.error;
        if (!InCi()) GTEST_SKIP() << pg.error;
        FAIL() << "CI is set, and the PostgreSQL tests must run there: " << pg.error;
      }
      pg_cleanup.started = true;
      server_ = pg.server.get();
      std::string error;
      // A test that stopped the server and failed before starting it again.
      ASSERT_TRUE(server_->Start(&error)) << error;
      dbname_ = "t_" + std::to_string(++pg.databases);
      ASSERT_TRUE(server_->CreateDatabase(dbname_, &error)) << error;
      conninfo_ = server_->ConnInfo(dbname_);
    }
    store_ = Connect();
    ASSERT_NE(store_, nullptr);
    if (lead) Lead();
  }
  // Another store on the same data: a second connection to the database, or (SQLite) the
  // data directory opened again. nullptr (with a failure) when it does not open.
  std::unique_ptr<Store> Connect() {
    auto store = backend_ == "sqlite" ? OpenSqliteStore(dir_.string())
                                      : OpenPostgresStore(conninfo_);
    if (!store.ok()) {
      ADD_FAILURE() << "cannot open the " << backend_ << " store: " << store.error();
      return nullptr;
    }
    return std::move(store).value();
  }
  void Lead() {
    auto epoch = store_->TryLead("test", "", 60000);
    ASSERT_TRUE(epoch.ok()) << epoch.error();
    ASSERT_TRUE(epoch.value().has_value()) << "a fresh store's lease is free";
    epoch_ = *epoch.value();
  }
  // Closes store_ (resigning its lease) and opens it again on the same data.
  void Reopen() {
    if (epoch_ != 0) {
      auto resigned = store_->ResignLead(epoch_);
      ASSERT_TRUE(resigned.ok()) << resigned.error();
      epoch_ = 0;
    }
    store_.reset();
    store_ = Connect();
    ASSERT_NE(store_, nullptr);
    Lead();
  }
  void TearDown() override {
    store_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
    if (server_ != nullptr && !server_->running()) {
      std::string error;
      EXPECT_TRUE(server_->Start(&error)) << error;
    }
  }
  JobRecord Job(const std::string& user) {
    JobRecord j;
    j.user = user;
    j.name = "train";
    j.gpus = 2;
    j.argv = {"python", "train.py", "--lr", "0.1 x"};
    j.env = {{"A", "1"}, {"B", "two words"}};
    j.workdir = "/tmp";
    j.submit_ms = 1000;
    return j;
  }
  std::string backend_;
  std::filesystem::path dir_;       // sqlite
  PgTestServer* server_ = nullptr;  // postgresql
  std::string conninfo_;            // postgresql
  std::string dbname_;              // postgresql
  std::unique_ptr<Store> store_;
  int64_t epoch_ = 0;
};

// The store's contract, over both backends.
class StoreTest : public StoreFixture, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override { OpenBackend(GetParam(), /*lead=*/true); }
};
INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::Values("sqlite", "postgresql"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

// What only a SQLite store has: its file, rewritten here as older versions left it.
class SqliteStoreTest : public StoreFixture {
 protected:
  void SetUp() override { OpenBackend("sqlite", /*lead=*/true); }
};

// What only a PostgreSQL store has: several controllers sharing it, and a server that can go
// away. store_ is open but does not lead.
class PgStoreTest : public StoreFixture {
 protected:
  void SetUp() override { OpenBackend("postgresql", /*lead=*/false); }
};

TEST_P(StoreTest, SubmitThenGetRoundTrips) {
  auto id = store_->SubmitJob(Job("alice"));
  ASSERT_TRUE(id.ok()) << id.error();
  auto got = store_->GetJob(id.value());
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got.value().has_value());
  const JobRecord& j = *got.value();
  EXPECT_EQ(j.user, "alice");
  EXPECT_EQ(j.state, JobState::kPending);
  EXPECT_EQ(j.argv, (std::vector<std::string>{"python", "train.py", "--lr", "0.1 x"}));
  EXPECT_EQ(j.env[1].second, "two words");
  EXPECT_EQ(j.gpus, 2);
  EXPECT_FALSE(j.exit_code.has_value());
  EXPECT_FALSE(store_->GetJob(999).value().has_value());
}

TEST_P(StoreTest, AUsersArgsBytesSumTheirJobsArgvAndEnvTextsLiveOrEnded) {
  EXPECT_EQ(store_->JobArgsBytesOf("alice").value(), 0);
  JobRecord small = Job("alice");
  JobRecord large = Job("alice");
  large.argv.push_back(std::string(100000, 'x') + "\u00e9");  // bytes, not characters
  large.env.push_back({"K", "\"quoted\"\n"});
  // Found by a review: a container's mounts (up to 64 paths of 4 KiB) were not counted.
  JobRecord mounts = Job("alice");
  mounts.container.image = "localhost/x";
  mounts.container.mounts.push_back({"/data/" + std::string(4000, 'm'), "/in", true});
  mounts.workdir = "/" + std::string(4000, 'w');
  EXPECT_GT(columns::ArgsBytes(mounts), columns::ArgsBytes(Job("alice")) + 8000);
  const int64_t first = store_->SubmitJob(small).value();
  store_->SubmitJob(large).value();
  store_->SubmitJob(Job("bob")).value();
  EXPECT_EQ(store_->JobArgsBytesOf("alice").value(),
            columns::ArgsBytes(small) + columns::ArgsBytes(large));
  EXPECT_GT(columns::ArgsBytes(large), 100000 + 2);
  EXPECT_EQ(store_->GetJob(first).value()->args_bytes, columns::ArgsBytes(small)) << "read back";
  // Ended jobs count until they are removed.
  ASSERT_TRUE(store_->Transition(first, JobState::kPending, JobState::kCancelled, {}, 2000).ok());
  EXPECT_EQ(store_->JobArgsBytesOf("alice").value(),
            columns::ArgsBytes(small) + columns::ArgsBytes(large));
  ASSERT_EQ(store_->RemoveEndedJobs({first}).value(), 1);
  EXPECT_EQ(store_->JobArgsBytesOf("alice").value(), columns::ArgsBytes(large));
  EXPECT_EQ(store_->JobArgsBytesOf("carol").value(), 0);
}

// A node's agent tells the jobs of this store from those of one made anew in its place by it.
TEST_P(StoreTest, AStoreHasAnIdOfItsOwnThatStaysAcrossOpens) {
  const auto id = store_->StoreId();
  ASSERT_TRUE(id.ok()) << id.error();
  EXPECT_EQ(id.value().size(), 32U) << id.value();
  EXPECT_EQ(id.value().find_first_not_of("0123456789abcdef"), std::string::npos) << id.value();
  Reopen();
  EXPECT_EQ(store_->StoreId().value(), id.value());
}

TEST_P(StoreTest, ClientTokenMakesSubmitIdempotent) {
  JobRecord job = Job("alice");
  job.client_token = "retry-1";
  const int64_t first = store_->SubmitJob(job).value();
  EXPECT_EQ(store_->SubmitJob(job).value(), first) << "the retry is the same job";
  JobRecord other_user = job;
  other_user.user = "bob";
  EXPECT_NE(store_->SubmitJob(other_user).value(), first) << "tokens are per user";
  job.client_token = "";
  EXPECT_NE(store_->SubmitJob(job).value(), first);
  EXPECT_EQ(store_->ListJobs({}).value().size(), 3U);
  // AddJob says which submit added the job: the controller queues a retry only after a look.
  job.client_token = "retry-2";
  const AddedJob added = store_->AddJob(job).value();
  EXPECT_TRUE(added.added);
  const AddedJob retried = store_->AddJob(job).value();
  EXPECT_FALSE(retried.added);
  EXPECT_EQ(retried.id, added.id);
}

TEST_P(StoreTest, ConcurrentSubmitsAreGroupCommittedAndAllKept) {
  std::vector<std::thread> threads;
  std::mutex mutex;
  std::set<int64_t> ids;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        JobRecord job = Job("user" + std::to_string(t));
        if (i % 10 == 0) job.client_token = "tok-" + std::to_string(i);  // some retried twice
        auto first = store_->SubmitJob(job);
        ASSERT_TRUE(first.ok()) << first.error();
        if (!job.client_token.empty()) {
          auto again = store_->SubmitJob(job);
          ASSERT_TRUE(again.ok());
          EXPECT_EQ(again.value(), first.value());
        }
        std::lock_guard<std::mutex> lock(mutex);
        ids.insert(first.value());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ids.size(), 800U);
  JobFilter all;
  all.limit = 10000;
  EXPECT_EQ(store_->ListJobs(all).value().size(), 800U);
}

TEST_P(StoreTest, JobOwnersNameEachKnownJobsUserStateAndEnd) {
  const int64_t a = store_->SubmitJob(Job("alice")).value();
  const int64_t b = store_->SubmitJob(Job("bob")).value();
  JobUpdate cancelled;
  cancelled.end_ms = 7000;
  ASSERT_TRUE(
      store_->Transition(b, JobState::kPending, JobState::kCancelled, cancelled, 7000).value());
  // More ids than one batch, unknown and repeated ones among them, out of order.
  std::vector<int64_t> ids = {b, 999999, a, b};
  for (int64_t k = 1; k <= 300; ++k) ids.push_back(100000 + k);
  auto owners = store_->JobOwners(ids);
  ASSERT_TRUE(owners.ok()) << owners.error();
  ASSERT_EQ(owners.value().size(), 2u);
  EXPECT_EQ(owners.value()[0].id, a);
  EXPECT_EQ(owners.value()[0].user, "alice");
  EXPECT_EQ(owners.value()[0].state, JobState::kPending);
  EXPECT_EQ(owners.value()[0].end_ms, 0);
  EXPECT_EQ(owners.value()[1].id, b);
  EXPECT_EQ(owners.value()[1].user, "bob");
  EXPECT_EQ(owners.value()[1].state, JobState::kCancelled);
  EXPECT_EQ(owners.value()[1].end_ms, 7000);
  EXPECT_TRUE(store_->JobOwners({}).value().empty());
}

TEST_P(StoreTest, EndedJobsPastTheRetentionGoWithTheirHistoryRanksAndUsage) {
  // Ended at 5000 (failed), 3000 (succeeded) and 9000 (cancelled); one still running.
  const auto ended = [this](JobState to, int64_t end_ms) {
    const int64_t id = store_->SubmitJob(Job("alice")).value();
    JobUpdate placed;
    placed.placement = std::vector<RankPlacement>{{"local", {0}}};
    placed.bump_epoch = true;
    EXPECT_TRUE(
        store_->Transition(id, JobState::kPending, JobState::kScheduled, placed, 1000).value());
    EXPECT_TRUE(store_->Transition(id, JobState::kScheduled, JobState::kRunning, {}, 1000).value());
    if (end_ms > 0) {
      JobUpdate end;
      end.end_ms = end_ms;
      EXPECT_TRUE(store_->Transition(id, JobState::kRunning, to, end, end_ms).value());
    }
    store::JobUsageRecord usage;
    usage.job_id = id;
    usage.series = "x";
    EXPECT_TRUE(store_->PutJobUsage({usage}).ok());
    return id;
  };
  const int64_t failed = ended(JobState::kFailed, 5000);
  const int64_t succeeded = ended(JobState::kSucceeded, 3000);
  const int64_t cancelled = ended(JobState::kCancelled, 9000);
  const int64_t running = ended(JobState::kRunning, 0);
  // The longest-ended first, only those ended before the cutoff, at most `limit`.
  EXPECT_EQ(store_->EndedJobIds(9000, 10).value(), (std::vector<int64_t>{succeeded, failed}));
  EXPECT_EQ(store_->EndedJobIds(10000, 1).value(), std::vector<int64_t>{succeeded});
  EXPECT_FALSE(store_->EndedJobIds(10000, 0).ok());
  // A live job among the ids, and an unknown one, are left alone.
  auto removed = store_->RemoveEndedJobs({succeeded, failed, running, 999999});
  ASSERT_TRUE(removed.ok()) << removed.error();
  EXPECT_EQ(removed.value(), 2);
  for (int64_t id : {succeeded, failed}) {
    EXPECT_FALSE(store_->GetJob(id).value().has_value()) << id;
    EXPECT_TRUE(store_->Events(id).value().empty()) << id;
    EXPECT_FALSE(store_->GetJobUsage(id).value().has_value()) << id;
  }
  for (int64_t id : {cancelled, running}) {
    EXPECT_TRUE(store_->GetJob(id).value().has_value()) << id;
    EXPECT_FALSE(store_->Events(id).value().empty()) << id;
    EXPECT_TRUE(store_->GetJobUsage(id).value().has_value()) << id;
  }
  EXPECT_EQ(store_->GetJob(running).value()->placement.size(), 1u);
  EXPECT_EQ(store_->RemoveEndedJobs({}).value(), 0);
  // Ids are never reused: with the newest job removed, the next one's id is still above it.
  const int64_t newest = ended(JobState::kSucceeded, 100);
  ASSERT_EQ(store_->RemoveEndedJobs({newest}).value(), 1);
  EXPECT_GT(store_->SubmitJob(Job("alice")).value(), newest);
}

TEST_P(StoreTest, TransitionsAreCompareAndSetAndLogged) {
  const int64_t id = store_->SubmitJob(Job("alice")).value();
  JobUpdate placed;
  placed.placement = std::vector<RankPlacement>{{"local", {2, 3}}};
  placed.bump_epoch = true;
  ASSERT_TRUE(
      store_->Transition(id, JobState::kPending, JobState::kScheduled, placed, 2000).value());
  // A stale writer that still thinks the job is PENDING changes nothing.
  EXPECT_FALSE(store_->Transition(id, JobState::kPending, JobState::kScheduled, {}, 2001).value());
  JobUpdate started;
  started.start_ms = 2500;
  started.pid = 4321;
  started.pid_start = 987654321;
  ASSERT_TRUE(
      store_->Transition(id, JobState::kScheduled, JobState::kRunning, started, 2500).value());
  EXPECT_FALSE(store_->GetJob(id).value()->host_usage.measured());
  JobUpdate done;
  done.end_ms = 9000;
  done.exit_code = 0;
  core::HostUsage used;
  used.source = core::UsageSource::kCgroupV1;
  used.set(core::UsageFigure::kCpuUsageUs, 4500000);
  used.set(core::UsageFigure::kOomKills, 0);
  done.host_usage = used;
  ASSERT_TRUE(store_->Transition(id, JobState::kRunning, JobState::kSucceeded, done, 9000).value());
  auto bad = store_->Transition(id, JobState::kSucceeded, JobState::kRunning, {}, 9100);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("SUCCEEDED -> RUNNING is not allowed"), std::string::npos);

  const JobRecord j = *store_->GetJob(id).value();
  EXPECT_EQ(j.state, JobState::kSucceeded);
  EXPECT_EQ(j.node, "local");
  EXPECT_EQ(j.gpu_indices, (std::vector<int>{2, 3}));
  EXPECT_EQ(j.epoch, 1);
  EXPECT_EQ(j.start_ms, 2500);
  EXPECT_EQ(j.exit_code, 0);
  EXPECT_EQ(j.pid, 4321);
  EXPECT_EQ(j.pid_start, 987654321U);
  EXPECT_EQ(j.host_usage.source, core::UsageSource::kCgroupV1);
  EXPECT_EQ(j.host_usage.figures, used.figures);
  const auto events = store_->Events(id).value();
  ASSERT_EQ(events.size(), 4U);
  EXPECT_EQ(events[0].what, "submitted");
  EXPECT_EQ(events[3].what, "RUNNING->SUCCEEDED");
}

TEST_P(StoreTest, TransitionAllCommitsTogetherAndReportsEachCompareAndSet) {
  const int64_t a = store_->SubmitJob(Job("alice")).value();
  const int64_t b = store_->SubmitJob(Job("bob")).value();
  JobUpdate placed;
  placed.placement = std::vector<RankPlacement>{{"n1", {}}};
  placed.bump_epoch = true;
  auto done = store_->TransitionAll({{a, JobState::kPending, JobState::kScheduled, placed},
                                     {b, JobState::kRunning, JobState::kSucceeded, {}},
                                     {a, JobState::kScheduled, JobState::kRunning, {}}},
                                    100);
  ASSERT_TRUE(done.ok()) << done.error();
  EXPECT_EQ(done.value(), (std::vector<bool>{true, false, true}));  // b was not RUNNING
  EXPECT_EQ(store_->GetJob(a).value()->state, JobState::kRunning);
  EXPECT_EQ(store_->GetJob(a).value()->epoch, 1);
  EXPECT_EQ(store_->GetJob(a).value()->node, "n1");
  EXPECT_EQ(store_->GetJob(b).value()->state, JobState::kPending);
  EXPECT_EQ(store_->Events(a).value().size(), 3U);  // submitted + two transitions
  // One transition that is not allowed refuses the whole batch.
  auto refused = store_->TransitionAll({{b, JobState::kPending, JobState::kScheduled, {}},
                                        {a, JobState::kRunning, JobState::kPending, {}}},
                                       200);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("not allowed"), std::string::npos);
  EXPECT_EQ(store_->GetJob(b).value()->state, JobState::kPending);
  EXPECT_TRUE(store_->TransitionAll({}, 300).value().empty());
}

// A request whose compare-and-set does not apply changes nothing: not the job, not its rank
// rows (even when it would place or unplace the job), and it adds no event; those that apply
// around it in the same batch are written in full.
TEST_P(StoreTest, TransitionAllLeavesTheJobsOfRequestsNotAppliedUntouched) {
  const int64_t a = store_->SubmitJob(Job("alice")).value();
  const int64_t b = store_->SubmitJob(Job("bob")).value();
  const int64_t c = store_->SubmitJob(Job("carol")).value();
  auto place = [](std::vector<RankPlacement> ranks) {
    JobUpdate u;
    u.placement = std::move(ranks);
    u.bump_epoch = true;
    return u;
  };
  auto placed = store_->TransitionAll(
      {{a, JobState::kPending, JobState::kScheduled, place({{"n1", {0, 1}}, {"n2", {2}}})},
       {b, JobState::kPending, JobState::kScheduled, place({{"n3", {0}}})}},
      100);
  ASSERT_TRUE(placed.ok()) << placed.error();
  JobUpdate ended;
  ended.end_ms = 150;
  ended.exit_code = 0;
  ended.reason = "not this one";
  JobUpdate marked;
  marked.preempting = true;
  marked.reason = "preempt";
  JobUpdate running = place({{"n9", {7}}});
  running.start_ms = 140;
  auto done = store_->TransitionAll(
      {{a, JobState::kScheduled, JobState::kRunning, running},              // applies: 2 ranks -> 1
       {b, JobState::kPending, JobState::kScheduled, place({{"x", {5}}})},  // b is SCHEDULED
       {c, JobState::kRunning, JobState::kSucceeded, ended},                // c is PENDING
       {c, JobState::kPending, JobState::kScheduled, place({{"n4", {1}}})},  // applies
       {b, JobState::kScheduled, JobState::kScheduled, marked},   // applies, within a state
       {a, JobState::kScheduled, JobState::kRunning, place({})},  // a is RUNNING now
       {c, JobState::kPending, JobState::kCancelled, ended}},     // c is SCHEDULED now
      200);
  ASSERT_TRUE(done.ok()) << done.error();
  EXPECT_EQ(done.value(), (std::vector<bool>{true, false, false, true, true, false, false}));

  const JobRecord ja = *store_->GetJob(a).value();
  EXPECT_EQ(ja.state, JobState::kRunning);
  EXPECT_EQ(ja.placement, (std::vector<RankPlacement>{{"n9", {7}}}));
  EXPECT_EQ(ja.epoch, 2);
  EXPECT_EQ(ja.start_ms, 140);
  const JobRecord jb = *store_->GetJob(b).value();
  EXPECT_EQ(jb.state, JobState::kScheduled);
  EXPECT_EQ(jb.placement, (std::vector<RankPlacement>{{"n3", {0}}}));
  EXPECT_EQ(jb.epoch, 1);
  EXPECT_TRUE(jb.preempting);
  EXPECT_EQ(jb.reason, "preempt");
  const JobRecord jc = *store_->GetJob(c).value();
  EXPECT_EQ(jc.state, JobState::kScheduled);
  EXPECT_EQ(jc.placement, (std::vector<RankPlacement>{{"n4", {1}}}));
  EXPECT_EQ(jc.epoch, 1);
  EXPECT_EQ(jc.end_ms, 0);
  EXPECT_FALSE(jc.exit_code.has_value());
  EXPECT_EQ(jc.reason, "");

  auto whats = [&](int64_t id) {
    std::vector<std::string> out;
    const std::vector<JobEvent> events = store_->Events(id).value();
    for (const JobEvent& e : events) out.push_back(e.what + "/" + e.detail);
    return out;
  };
  EXPECT_EQ(whats(a), (std::vector<std::string>{"submitted/alice", "PENDING->SCHEDULED/",
                                                "SCHEDULED->RUNNING/"}));
  EXPECT_EQ(whats(b), (std::vector<std::string>{"submitted/bob", "PENDING->SCHEDULED/",
                                                "SCHEDULED/preempt"}));
  EXPECT_EQ(whats(c), (std::vector<std::string>{"submitted/carol", "PENDING->SCHEDULED/"}));

  // An unplacing that applies removes every rank row.
  auto unplaced = store_->TransitionAll({{a, JobState::kRunning, JobState::kLost, place({})}}, 300);
  ASSERT_TRUE(unplaced.ok()) << unplaced.error();
  EXPECT_EQ(unplaced.value(), std::vector<bool>{true});
  EXPECT_TRUE(store_->GetJob(a).value()->placement.empty());
}

// A large batch, with each job twice (the second request sees the first's change), reports each
// request's own result in order.
TEST_P(StoreTest, TransitionAllReportsEachRequestOfALargeBatch) {
  std::vector<int64_t> ids;
  for (int i = 0; i < 300; ++i) {
    ids.push_back(store_->SubmitJob(Job("u" + std::to_string(i % 7))).value());
  }
  std::vector<TransitionRequest> requests;
  std::vector<bool> expected;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    JobUpdate u;
    u.placement = std::vector<RankPlacement>{{"n" + std::to_string(i), {static_cast<int>(i % 8)}}};
    const bool wrong = i % 3 == 0;  // claims the job is RUNNING: does not apply
    requests.push_back({ids[i], wrong ? JobState::kRunning : JobState::kPending,
                        wrong ? JobState::kFailed : JobState::kScheduled, u});
    expected.push_back(!wrong);
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    requests.push_back({ids[i], JobState::kScheduled, JobState::kRunning, {}});
    expected.push_back(i % 3 != 0);
  }
  auto done = store_->TransitionAll(requests, 500);
  ASSERT_TRUE(done.ok()) << done.error();
  EXPECT_EQ(done.value(), expected);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const JobRecord j = *store_->GetJob(ids[i]).value();
    EXPECT_EQ(j.state, i % 3 == 0 ? JobState::kPending : JobState::kRunning) << i;
    EXPECT_EQ(j.node, i % 3 == 0 ? "" : "n" + std::to_string(i)) << i;
    EXPECT_EQ(store_->Events(ids[i]).value().size(), i % 3 == 0 ? 1U : 3U) << i;
  }
}

TEST_P(StoreTest, LimitsAndRestartableRoundTrip) {
  JobRecord j = Job("carol");
  j.restartable = true;
  j.cpu_milli = 2500;
  j.memory_mib = 4096;
  const JobRecord got = *store_->GetJob(store_->SubmitJob(j).value()).value();
  EXPECT_TRUE(got.restartable);
  EXPECT_EQ(got.cpu_milli, 2500);
  EXPECT_EQ(got.memory_mib, 4096);
}

TEST_P(StoreTest, NodeRegistryUpsertsByNameAndKeepsFirstSeen) {
  NodeRecord n;
  n.name = "gpu-b";
  n.address = "gpu-b";
  n.gpus = 8;
  n.gpu_model = "H100-80GB";
  n.epoch = 5;
  n.first_seen_ms = 100;
  n.last_seen_ms = 100;
  n.state = "READY";
  ASSERT_TRUE(store_->PutNode(n).ok());
  NodeRecord a = n;
  a.name = "gpu-a";
  ASSERT_TRUE(store_->PutNode(a).ok());
  n.first_seen_ms = 999;  // ignored on update
  n.last_seen_ms = 500;
  n.epoch = 6;
  n.state = "LOST";
  n.drains = {{3, "fan noise", "admin", 400}, {5, "", "ops", 450}};
  ASSERT_TRUE(store_->PutNode(n).ok());
  const std::vector<NodeRecord> nodes = store_->Nodes().value();
  ASSERT_EQ(nodes.size(), 2U);
  EXPECT_EQ(nodes[0].name, "gpu-a");
  EXPECT_EQ(nodes[1].state, "LOST");
  EXPECT_EQ(nodes[1].epoch, 6);
  EXPECT_EQ(nodes[1].first_seen_ms, 100);
  EXPECT_EQ(nodes[1].last_seen_ms, 500);
  EXPECT_EQ(nodes[1].gpus, 8);
  EXPECT_TRUE(nodes[0].drains.empty());
  ASSERT_EQ(nodes[1].drains.size(), 2U);
  EXPECT_EQ(nodes[1].drains[0].gpu, 3);
  EXPECT_EQ(nodes[1].drains[0].reason, "fan noise");
  EXPECT_EQ(nodes[1].drains[0].by, "admin");
  EXPECT_EQ(nodes[1].drains[0].since_ms, 400);
  EXPECT_EQ(nodes[1].drains[1].gpu, 5);
}

TEST_P(StoreTest, ListFiltersAndPages) {
  for (int i = 0; i < 5; ++i) store_->SubmitJob(Job(i % 2 ? "bob" : "alice"));
  const int64_t first = store_->ListJobs({}).value().front().id;
  store_->Transition(first, JobState::kPending, JobState::kCancelled, {}, 5);
  JobFilter alice;
  alice.user = "alice";
  EXPECT_EQ(store_->ListJobs(alice).value().size(), 3U);
  JobFilter pending;
  pending.state = JobState::kPending;
  EXPECT_EQ(store_->ListJobs(pending).value().size(), 4U);
  JobFilter page;
  page.limit = 2;
  const auto p1 = store_->ListJobs(page).value();
  ASSERT_EQ(p1.size(), 2U);
  page.after_id = p1.back().id;
  const auto p2 = store_->ListJobs(page).value();
  ASSERT_EQ(p2.size(), 2U);
  EXPECT_GT(p2.front().id, p1.back().id);
  EXPECT_EQ(store_->LiveJobs().value().size(), 4U);
  // Alice's live jobs by id alone: her first was cancelled.
  const std::vector<int64_t> alices = store_->LiveJobIdsOf("alice").value();
  ASSERT_EQ(alices.size(), 2U);
  EXPECT_TRUE(std::is_sorted(alices.begin(), alices.end()));
  EXPECT_EQ(std::count(alices.begin(), alices.end(), first), 0);
  for (int64_t id : alices) EXPECT_EQ(store_->GetJob(id).value()->user, "alice");
  EXPECT_TRUE(store_->LiveJobIdsOf("carol").value().empty());
  // A list that does not show env does not read it (up to 512 KiB a job); the rest is the same.
  ASSERT_FALSE(store_->ListJobs(alice).value().front().env.empty()) << "Job() has an env";
  JobFilter lean = alice;
  lean.without_env = true;
  const auto without = store_->ListJobs(lean).value();
  ASSERT_EQ(without.size(), 3U);
  EXPECT_TRUE(without.front().env.empty());
  EXPECT_EQ(without.front().argv, store_->ListJobs(alice).value().front().argv);
  EXPECT_EQ(without.front().id, store_->ListJobs(alice).value().front().id);
}

TEST_P(StoreTest, ListSortsByAnyKeyFiltersByQueueAndModelAndCounts) {
  for (int i = 0; i < 6; ++i) {
    JobRecord j = Job(i % 2 ? "bob" : "alice");
    j.gpus = 1 + (i * 5) % 7;  // 1, 6, 4, 2, 7, 5
    j.queue = i < 3 ? "team-a" : "team-b";
    j.gpu_type = i % 3 == 0 ? "H100" : "A100";
    store_->SubmitJob(j);
  }
  JobFilter by_gpus;
  by_gpus.sort = JobFilter::SortKey::kGpus;
  by_gpus.descending = true;
  std::vector<int> gpus;
  const std::vector<JobRecord> sorted = store_->ListJobs(by_gpus).value();
  for (const JobRecord& j : sorted) gpus.push_back(j.gpus);
  EXPECT_EQ(gpus, (std::vector<int>{7, 6, 5, 4, 2, 1}));
  by_gpus.offset = 2;
  by_gpus.limit = 2;
  gpus.clear();
  const std::vector<JobRecord> paged = store_->ListJobs(by_gpus).value();
  for (const JobRecord& j : paged) gpus.push_back(j.gpus);
  EXPECT_EQ(gpus, (std::vector<int>{5, 4}));
  EXPECT_EQ(store_->CountJobs(by_gpus).value(), 6);  // order, offset and limit aside
  JobFilter team_b_a100;
  team_b_a100.queue = "team-b";
  team_b_a100.gpu_type = "A100";
  const auto listed = store_->ListJobs(team_b_a100).value();
  ASSERT_EQ(listed.size(), 2U);
  for (const JobRecord& j : listed) {
    EXPECT_EQ(j.queue, "team-b");
    EXPECT_EQ(j.gpu_type, "A100");
  }
  EXPECT_EQ(store_->CountJobs(team_b_a100).value(), 2);
  team_b_a100.user = "bob";
  EXPECT_EQ(store_->CountJobs(team_b_a100).value(), 1);
  EXPECT_EQ(ParseSortKey("submit"), JobFilter::SortKey::kSubmit);
  EXPECT_FALSE(ParseSortKey("id; DROP TABLE jobs"));
}

TEST_P(StoreTest, CommittedJobsSurviveReopening) {
  const int64_t id = store_->SubmitJob(Job("alice")).value();
  ASSERT_TRUE(store_->PutUser("alice", "hash-a", false).value());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(store_->GetJob(id).value()->user, "alice");
  auto user = store_->UserByToken("hash-a").value();
  ASSERT_TRUE(user.has_value());
  EXPECT_EQ(user->name, "alice");
  EXPECT_FALSE(store_->UserByToken("nope").value().has_value());
}

TEST_P(StoreTest, UsersHaveSeveralTokensThatCanBeRevokedOneByOne) {
  TokenRecord first;
  first.sha256 = std::string(64, 'a');
  ASSERT_TRUE(store_->AddUser("carol", false, first).ok());
  auto again = store_->AddUser("carol", true, first);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.failure().field, "name");
  TokenRecord second;
  second.sha256 = std::string(64, 'b');
  second.user = "carol";
  ASSERT_TRUE(store_->AddToken(second).ok());
  EXPECT_EQ(store_->UserByToken(first.sha256).value()->name, "carol");
  EXPECT_EQ(store_->UserByToken(second.sha256).value()->name, "carol");
  ASSERT_EQ(store_->Users().value().size(), 1U);
  EXPECT_EQ(store_->Users().value()[0].tokens, 2);
  EXPECT_TRUE(store_->RevokeToken(TokenId(first.sha256)).value());
  EXPECT_FALSE(store_->UserByToken(first.sha256).value().has_value());
  EXPECT_TRUE(store_->UserByToken(second.sha256).value().has_value());
  EXPECT_FALSE(store_->RevokeToken("not-an-id").ok());
  EXPECT_TRUE(store_->RemoveUser("carol").value());
  EXPECT_FALSE(store_->UserByToken(second.sha256).value().has_value());
  EXPECT_FALSE(store_->RemoveUser("carol").value());
}

// Found by a review: expired tokens were never deleted, and each autoscaled node leaves its
// expired join token, so the table every credential check may read grew for ever.
TEST_P(StoreTest, ExpiredTokensAreRemovedAndUnexpiringOnesStay) {
  TokenRecord forever;
  forever.sha256 = std::string(64, 'a');
  ASSERT_TRUE(store_->AddUser("erin", false, forever).ok());
  TokenRecord old_user = forever;
  old_user.sha256 = std::string(64, 'b');
  old_user.user = "erin";
  old_user.expires_ms = 1000;
  ASSERT_TRUE(store_->AddToken(old_user).ok());
  TokenRecord old_join;
  old_join.sha256 = std::string(64, 'c');
  old_join.kind = TokenKind::kJoin;
  old_join.expires_ms = 2000;
  ASSERT_TRUE(store_->AddToken(old_join).ok());
  TokenRecord fresh_join = old_join;
  fresh_join.sha256 = std::string(64, 'd');
  fresh_join.expires_ms = 5000;
  ASSERT_TRUE(store_->AddToken(fresh_join).ok());
  ASSERT_EQ(store_->CredentialOf(old_join.sha256, 1).value().token->kind, TokenKind::kJoin);
  EXPECT_EQ(store_->RemoveExpiredTokens(3000).value(), 2);
  std::vector<std::string> left;
  const auto tokens = store_->Tokens();
  ASSERT_TRUE(tokens.ok()) << tokens.error();
  for (const TokenRecord& t : tokens.value()) left.push_back(t.sha256);
  EXPECT_EQ(left, (std::vector<std::string>{forever.sha256, fresh_join.sha256}));
  EXPECT_FALSE(store_->CredentialOf(old_join.sha256, 1).value().token.has_value())
      << "a remembered credential goes with its row";
  EXPECT_EQ(store_->RemoveExpiredTokens(3000).value(), 0);
  EXPECT_TRUE(store_->UserByToken(forever.sha256).value().has_value());
}

// CredentialOf answers from memory, but never past a change of users or tokens made through the
// same store: a revoked token, a removed user, a used join token stop working at once.
TEST_P(StoreTest, RememberedCredentialsAreForgottenByEveryChangeOfUsersOrTokens) {
  TokenRecord dave;
  dave.sha256 = std::string(64, 'd');
  ASSERT_TRUE(store_->AddUser("dave", true, dave).ok());
  ASSERT_TRUE(store_->CredentialOf(dave.sha256, 1).value().user.has_value());  // now remembered
  EXPECT_TRUE(store_->CredentialOf(dave.sha256, 1).value().user->admin);
  ASSERT_TRUE(store_->RevokeToken(TokenId(dave.sha256)).value());
  EXPECT_FALSE(store_->CredentialOf(dave.sha256, 1).value().user.has_value());
  EXPECT_FALSE(store_->CredentialOf(dave.sha256, 1).value().token.has_value());

  TokenRecord second;
  second.sha256 = std::string(64, 'e');
  second.user = "dave";
  ASSERT_TRUE(store_->AddToken(second).ok());
  ASSERT_EQ(store_->CredentialOf(second.sha256, 1).value().user->name, "dave");
  ASSERT_TRUE(store_->RemoveUser("dave").value());
  EXPECT_FALSE(store_->CredentialOf(second.sha256, 1).value().user.has_value());
  EXPECT_FALSE(store_->CredentialOf(second.sha256, 1).value().token.has_value())
      << "a user token outlives its user nowhere";

  TokenRecord join;
  join.sha256 = std::string(64, 'f');
  join.kind = TokenKind::kJoin;
  ASSERT_TRUE(store_->AddToken(join).ok());
  ASSERT_EQ(store_->CredentialOf(join.sha256, 1).value().token->kind, TokenKind::kJoin);
  TokenRecord node;
  node.sha256 = std::string(64, '1');
  node.kind = TokenKind::kNode;
  node.node = "gpu-7";
  ASSERT_TRUE(store_->ExchangeJoinToken(join.sha256, node, 1).value());
  EXPECT_FALSE(store_->CredentialOf(join.sha256, 1).value().token.has_value()) << "used once";
  ASSERT_EQ(store_->CredentialOf(node.sha256, 1).value().token->node, "gpu-7");
  // A join token made for the node's name (unspent) is one of its credentials too.
  TokenRecord rejoin;
  rejoin.sha256 = std::string(64, '2');
  rejoin.kind = TokenKind::kJoin;
  rejoin.node = "gpu-7";
  ASSERT_TRUE(store_->AddToken(rejoin).ok());
  EXPECT_EQ(store_->RevokeNodeTokens("gpu-7").value(), 2);
  EXPECT_FALSE(store_->CredentialOf(node.sha256, 1).value().token.has_value());
  EXPECT_FALSE(store_->CredentialOf(rejoin.sha256, 1).value().token.has_value());
  EXPECT_FALSE(store_->CredentialOf(std::string(64, '9'), 1).value().token.has_value());
}

// Found by a review: each made-up token was a lookup in the store (a query on PostgreSQL), so a
// stream of them from many clients made the database work for each. Now they cost one read of
// every token's hash per kCredentialMemory, while a token added through this store works at once.
TEST_P(StoreTest, MadeUpTokensCostOneReadOfTheHashesNotOneLookupEach) {
  TokenRecord erin;
  erin.sha256 = std::string(64, 'a');
  ASSERT_TRUE(store_->AddUser("erin", false, erin).ok());
  const int64_t before = store_->CredentialReads();
  for (int i = 0; i < 1000; ++i) {
    const std::string made_up = std::to_string(i) + std::string(60, 'b');
    const auto credential = store_->CredentialOf(made_up, 1);
    ASSERT_TRUE(credential.ok()) << credential.error();
    ASSERT_FALSE(credential.value().user || credential.value().token);
  }
  // Within 2 s: the first read them all; later ones answered from them (a slow machine may need
  // a second read).
  EXPECT_LE(store_->CredentialReads() - before, 2);
  // A token added through this store is known at once, as is erin's own.
  TokenRecord second;
  second.sha256 = std::string(64, 'c');
  second.user = "erin";
  ASSERT_TRUE(store_->AddToken(second).ok());
  EXPECT_EQ(store_->CredentialOf(second.sha256, 1).value().user->name, "erin");
  EXPECT_EQ(store_->CredentialOf(erin.sha256, 1).value().user->name, "erin");
}

// A token added by another process sharing the data (a former leader) is known here within
// kCredentialMemory, even right after this store read every hash.
TEST_F(SqliteStoreTest, ATokenAddedElsewhereIsKnownWithinTheCredentialMemory) {
  TokenRecord frank;
  frank.sha256 = std::string(64, 'a');
  ASSERT_TRUE(store_->AddUser("frank", false, frank).ok());
  EXPECT_FALSE(store_->CredentialOf(std::string(64, 'x'), 1).value().user);  // hashes read
  std::unique_ptr<Store> other = Connect();
  ASSERT_NE(other, nullptr);
  TokenRecord added;
  added.sha256 = std::string(64, 'd');
  added.user = "frank";
  ASSERT_TRUE(other->AddToken(added).ok());
  std::this_thread::sleep_for(Store::kCredentialMemory + std::chrono::milliseconds(100));
  const auto found = store_->CredentialOf(added.sha256, 1);
  ASSERT_TRUE(found.ok()) << found.error();
  ASSERT_TRUE(found.value().user.has_value());
  EXPECT_EQ(found.value().user->name, "frank");
}

// A token with an end works up to the millisecond before it, remembered or not, whatever kind.
TEST_P(StoreTest, CredentialsStopAtTheirEnd) {
  TokenRecord erin;
  erin.sha256 = std::string(64, 'a');
  erin.expires_ms = 5000;
  ASSERT_TRUE(store_->AddUser("erin", false, erin).ok());
  auto held = store_->CredentialOf(erin.sha256, 4999);
  ASSERT_TRUE(held.value().user.has_value());
  EXPECT_EQ(held.value().expires_ms, 5000);
  // Remembered from the read above, and still refused from its end on.
  EXPECT_FALSE(store_->CredentialOf(erin.sha256, 5000).value().user.has_value());
  EXPECT_FALSE(store_->CredentialOf(erin.sha256, 5000).value().token.has_value());
  EXPECT_TRUE(store_->CredentialOf(erin.sha256, 4000).value().user.has_value());

  TokenRecord forever;
  forever.sha256 = std::string(64, 'b');
  forever.user = "erin";
  ASSERT_TRUE(store_->AddToken(forever).ok());
  EXPECT_EQ(store_->CredentialOf(forever.sha256, int64_t{1} << 50).value().user->name, "erin");

  TokenRecord node;
  node.sha256 = std::string(64, 'c');
  node.kind = TokenKind::kNode;
  node.node = "gpu-9";
  node.expires_ms = 7000;
  ASSERT_TRUE(store_->AddToken(node).ok());
  EXPECT_TRUE(store_->CredentialOf(node.sha256, 6999).value().token.has_value());
  EXPECT_FALSE(store_->CredentialOf(node.sha256, 7000).value().token.has_value());
}

TEST_P(StoreTest, AJoinTokenIsExchangedOnceAndOnlyBeforeItExpires) {
  TokenRecord join;
  join.sha256 = std::string(64, 'c');
  join.kind = TokenKind::kJoin;
  join.expires_ms = 5000;
  ASSERT_TRUE(store_->AddToken(join).ok());
  TokenRecord node;
  node.sha256 = std::string(64, 'd');
  node.kind = TokenKind::kNode;
  node.node = "gpu-a";
  EXPECT_FALSE(store_->ExchangeJoinToken(join.sha256, node, 6000).value());  // expired
  EXPECT_TRUE(store_->ExchangeJoinToken(join.sha256, node, 4000).value());
  TokenRecord other = node;
  other.sha256 = std::string(64, 'e');
  other.node = "gpu-b";
  EXPECT_FALSE(store_->ExchangeJoinToken(join.sha256, other, 4000).value());  // spent
  auto held = store_->TokenBySha256(std::string(64, 'd')).value();
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ(held->kind, TokenKind::kNode);
  EXPECT_EQ(held->node, "gpu-a");
  EXPECT_FALSE(store_->UserByToken(std::string(64, 'd')).value().has_value());
  // Another join for the same node is refused while it has a credential.
  TokenRecord second_join = join;
  second_join.sha256 = std::string(64, 'f');
  ASSERT_TRUE(store_->AddToken(second_join).ok());
  auto takeover = store_->ExchangeJoinToken(second_join.sha256, node, 4000);
  ASSERT_FALSE(takeover.ok());
  EXPECT_EQ(takeover.failure().code, core::ErrorCode::kForbidden);
  EXPECT_EQ(store_->RevokeNodeTokens("gpu-a").value(), 1);
  EXPECT_FALSE(store_->TokenBySha256(std::string(64, 'd')).value().has_value());
}

TEST_P(StoreTest, AuditEventsNameTheirActor) {
  ASSERT_TRUE(store_->Audit(0, "root", "user added", "carol", 1000).ok());
  const auto events = store_->Events(0).value();
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].actor, "root");
  EXPECT_EQ(events[0].what, "user added");
  const int64_t id = store_->SubmitJob(Job("alice")).value();
  EXPECT_EQ(store_->Events(id).value().at(0).actor, "alice");
}

// The audit log was one answer however long it grew.
TEST_P(StoreTest, EventsComeInPagesNewestPageFirstEachOldestFirst) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(store_->Audit(0, "root", "token revoked", std::to_string(i), 1000 + i).ok());
  }
  ASSERT_TRUE(store_->SubmitJob(Job("alice")).ok());  // another job's event, not in the audit log
  const auto latest = store_->EventsPage(0, 0, 2).value();
  ASSERT_EQ(latest.size(), 2U);
  EXPECT_EQ(latest[0].detail, "3");
  EXPECT_EQ(latest[1].detail, "4");
  EXPECT_LT(latest[0].id, latest[1].id);
  const auto older = store_->EventsPage(0, latest[0].id, 10).value();
  ASSERT_EQ(older.size(), 3U);
  EXPECT_EQ(older[0].detail, "0");
  EXPECT_EQ(older[2].detail, "2");
  EXPECT_TRUE(store_->EventsPage(0, older[0].id, 10).value().empty());
  EXPECT_EQ(store_->Events(0).value().at(4).id, latest[1].id);
  // And forward, from a reader's last event: the next ones, oldest first.
  const auto next = store_->EventsAfter(0, older[0].id, 2).value();
  ASSERT_EQ(next.size(), 2U);
  EXPECT_EQ(next[0].detail, "1");
  EXPECT_EQ(next[1].detail, "2");
  const auto rest = store_->EventsAfter(0, next[1].id, 10).value();
  ASSERT_EQ(rest.size(), 2U) << "another job's event is not in it";
  EXPECT_EQ(rest[1].id, latest[1].id);
  EXPECT_TRUE(store_->EventsAfter(0, latest[1].id, 10).value().empty());
}

TEST_P(StoreTest, APlacementIsOneRowPerRankAndAnEmptyOneUnplacesTheJob) {
  const int64_t id = store_->SubmitJob(Job("alice")).value();
  JobUpdate placed;
  placed.placement = std::vector<RankPlacement>{{"n2", {0, 1}}, {"n1", {4, 5}}};
  ASSERT_TRUE(
      store_->Transition(id, JobState::kPending, JobState::kScheduled, placed, 100).value());
  JobRecord j = *store_->GetJob(id).value();
  ASSERT_EQ(j.placement.size(), 2u);
  EXPECT_EQ(j.placement[0], (RankPlacement{"n2", {0, 1}})) << "rank order, not name order";
  EXPECT_EQ(j.placement[1], (RankPlacement{"n1", {4, 5}}));
  EXPECT_EQ(j.node, "n2,n1");
  EXPECT_EQ(j.gpu_indices, (std::vector<int>{0, 1, 4, 5}));
  JobUpdate again;
  again.placement = std::vector<RankPlacement>{};
  ASSERT_TRUE(store_->Transition(id, JobState::kScheduled, JobState::kPending, again, 200).value());
  j = *store_->GetJob(id).value();
  EXPECT_TRUE(j.placement.empty());
  EXPECT_EQ(j.node, "");
  EXPECT_TRUE(j.gpu_indices.empty());
}

TEST_F(SqliteStoreTest, SchemaNineMovesOldPlacementsIntoRankRows) {
  const int64_t multi = store_->SubmitJob(Job("alice")).value();
  const int64_t single = store_->SubmitJob(Job("bob")).value();
  const int64_t waiting = store_->SubmitJob(Job("carol")).value();
  store_.reset();
  // The store as version 8 left it: the node list and a flat GPU list on the job row.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "gpufleet.db").string().c_str(), &db), SQLITE_OK);
  const std::string v8 =
      "DROP TABLE job_ranks;DROP TABLE job_usage;DROP INDEX jobs_by_end;DROP TABLE scale_nodes;"
      "DROP INDEX jobs_by_queue;DROP INDEX jobs_by_gpu_type;DROP INDEX jobs_by_submit;"
      "ALTER TABLE jobs DROP COLUMN container;ALTER TABLE jobs DROP COLUMN min_gpus;"
      "DROP INDEX jobs_by_user_args;ALTER TABLE jobs DROP COLUMN args_bytes;"
      "ALTER TABLE jobs ADD COLUMN node TEXT NOT NULL DEFAULT '';"
      "ALTER TABLE jobs ADD COLUMN gpu_indices TEXT NOT NULL DEFAULT '[]';"
      "UPDATE jobs SET node='a,b', gpu_indices='[0,1,2,3]' WHERE id=" +
      std::to_string(multi) +
      ";UPDATE jobs SET node='local', gpu_indices='[5]' WHERE id=" + std::to_string(single) +
      ";UPDATE meta SET value='8' WHERE key='schema_version';";
  ASSERT_EQ(sqlite3_exec(db, v8.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto reopened = OpenSqliteStore(dir_.string());
  ASSERT_TRUE(reopened.ok()) << reopened.error();
  store_ = std::move(reopened).value();
  JobRecord j = *store_->GetJob(multi).value();
  EXPECT_EQ(j.placement,
            (std::vector<RankPlacement>{{"a", {0, 1}}, {"b", {2, 3}}}));
  j = *store_->GetJob(single).value();
  EXPECT_EQ(j.placement, (std::vector<RankPlacement>{{"local", {5}}}));
  EXPECT_TRUE(store_->GetJob(waiting).value()->placement.empty());
  // Version 15 sized the argv and env of the jobs already there (not their other texts, which
  // new jobs' figures count as well).
  const JobRecord old_job = Job("alice");
  EXPECT_EQ(store_->JobArgsBytesOf("alice").value(),
            static_cast<int64_t>(nlohmann::json(old_job.argv).dump().size() +
                                 nlohmann::json(old_job.env).dump().size()));
}

TEST_P(StoreTest, AContainerJobsImageAndMountsAreKeptAndAHostJobHasNone) {
  JobRecord job = Job("alice");
  job.container.image = "localhost/train:1";
  job.container.mounts = {{"/data/set", "/data", true}, {"/scratch", "/out", false}};
  const int64_t id = store_->SubmitJob(job).value();
  const int64_t host = store_->SubmitJob(Job("bob")).value();
  EXPECT_EQ(store_->GetJob(id).value()->container, job.container);
  EXPECT_TRUE(store_->GetJob(host).value()->container.empty());
  bool listed = false;
  const std::vector<JobRecord> jobs = store_->ListJobs({}).value();
  for (const JobRecord& j : jobs) {
    if (j.id == id) listed = j.container == job.container;
  }
  EXPECT_TRUE(listed) << "listings carry it too";
}

TEST_P(StoreTest, ScaleNodesAreReplacedByNameAndSurviveReopening) {
  ScaleNodeRecord n;
  n.name = "gf-v100-1";
  n.group = "v100";
  n.spot = true;
  n.state = "creating";
  n.created_ms = 5;
  n.updated_ms = 5;
  n.join_token_id = "abc";
  ASSERT_TRUE(store_->PutScaleNode(n).value());
  n.state = "booting";
  n.updated_ms = 9;
  n.detail = "accepted";
  ASSERT_TRUE(store_->PutScaleNode(n).value());
  ScaleNodeRecord other = n;
  other.name = "gf-a100-1";
  ASSERT_TRUE(store_->PutScaleNode(other).value());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  const auto nodes = store_->ScaleNodes().value();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].name, "gf-a100-1");  // by name
  EXPECT_EQ(nodes[1].state, "booting");
  EXPECT_TRUE(nodes[1].spot);
  EXPECT_EQ(nodes[1].created_ms, 5);
  EXPECT_EQ(nodes[1].updated_ms, 9);
  EXPECT_EQ(nodes[1].join_token_id, "abc");
  EXPECT_EQ(nodes[1].detail, "accepted");
  EXPECT_TRUE(store_->DeleteScaleNode("gf-v100-1").value());
  EXPECT_FALSE(store_->DeleteScaleNode("gf-v100-1").value());
  EXPECT_EQ(store_->ScaleNodes().value().size(), 1u);
}

TEST_F(SqliteStoreTest, NewerSchemaIsRefusedClearly) {
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "gpufleet.db").string().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET value='99' WHERE key='schema_version'", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto reopened = OpenSqliteStore(dir_.string());
  ASSERT_FALSE(reopened.ok());
  EXPECT_NE(reopened.error().find("newer gpufleet"), std::string::npos);
}

TEST(StoreOpen, UnusableDataDirectoryIsAClearError) {
  const auto file =
      std::filesystem::temp_directory_path() / ("gpufleet-not-a-dir-" + std::to_string(::getpid()));
  std::ofstream(file) << "x";
  auto store = OpenSqliteStore((file / "data").string());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().find("cannot create data directory"), std::string::npos);
  std::filesystem::remove(file);
}

TEST(StoreStates, TransitionTable) {
  EXPECT_TRUE(TransitionAllowed(JobState::kPending, JobState::kScheduled));
  EXPECT_TRUE(TransitionAllowed(JobState::kLost, JobState::kPending)) << "requeue";
  EXPECT_FALSE(TransitionAllowed(JobState::kPending, JobState::kRunning));
  EXPECT_FALSE(TransitionAllowed(JobState::kCancelled, JobState::kPending));
  for (auto s : {JobState::kSucceeded, JobState::kFailed, JobState::kCancelled}) {
    EXPECT_TRUE(IsTerminal(s));
    EXPECT_EQ(ParseState(StateName(s)), s);
  }
}

// Group commit: a job whose data PostgreSQL refuses (a name that is not UTF-8; SQLite keeps it)
// fails on its own, with kInvalid; the jobs committed in the same batch are kept. (Each round's
// submits start together, so the bad one is most likely batched with others.)
TEST_P(StoreTest, AJobWithBadDataFailsAloneNotTheJobsBatchedWithIt) {
  constexpr int kThreads = 12;
  int kept = 0;
  for (int round = 0; round < 3; ++round) {
    const int bad = (round * 5 + 7) % kThreads;
    std::vector<core::Result<int64_t>> results(kThreads, core::Error{"not run"});
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        JobRecord job = Job("alice");
        job.name = i == bad ? std::string("bad \xff\xfe name") : "good-" + std::to_string(i);
        while (!go) std::this_thread::yield();
        results[i] = store_->SubmitJob(job);
      });
    }
    go = true;
    for (auto& t : threads) t.join();
    for (int i = 0; i < kThreads; ++i) {
      if (i == bad && GetParam() == "postgresql") {
        ASSERT_FALSE(results[i].ok()) << "PostgreSQL keeps only UTF-8 text";
        EXPECT_EQ(results[i].failure().code, core::ErrorCode::kInvalid) << results[i].error();
        continue;
      }
      ASSERT_TRUE(results[i].ok())
          << "round " << round << ", job " << i << ": " << results[i].error();
      ++kept;
    }
  }
  JobFilter all;
  all.limit = 1000;
  EXPECT_EQ(store_->ListJobs(all).value().size(), static_cast<size_t>(kept));
}

TEST_P(StoreTest, KeepsUsageSeriesAndListsEndedJobsForTheReport) {
  const int64_t ended = store_->SubmitJob(Job("alice")).value();
  const int64_t running = store_->SubmitJob(Job("bob")).value();
  ASSERT_TRUE(store_->Transition(ended, JobState::kPending, JobState::kScheduled, {}, 1).value());
  ASSERT_TRUE(store_->Transition(ended, JobState::kScheduled, JobState::kRunning, {}, 2).value());
  JobUpdate done;
  done.end_ms = 5000;
  done.reason = "idle for 30 min";
  ASSERT_TRUE(store_->Transition(ended, JobState::kRunning, JobState::kCancelled, done, 5000).value());
  std::string bytes("\x01\x02\x00\xff binary", 12);
  ASSERT_TRUE(store_->PutJobUsage({{ended, bytes, "idle:warning:0.500", "H100", 0.5, 0.0, 5000},
                                   {running, "x", "", "A100", 1.0, 0.7, 4000}})
                  .ok());
  auto got = store_->GetJobUsage(ended);
  ASSERT_TRUE(got.ok() && got.value().has_value());
  EXPECT_EQ(got.value()->series, bytes);  // binary-safe
  EXPECT_EQ(got.value()->findings, "idle:warning:0.500");
  EXPECT_DOUBLE_EQ(got.value()->gpu_h_alloc, 0.5);
  EXPECT_FALSE(store_->GetJobUsage(999).value().has_value());
  // Replaced by job id.
  ASSERT_TRUE(store_->PutJobUsage({{ended, "y", "", "H100", 0.6, 0.1, 6000}}).ok());
  EXPECT_EQ(store_->GetJobUsage(ended).value()->series, "y");
  // Only ended jobs since the start of the report are listed.
  auto rows = store_->ReportRows(4000);
  ASSERT_TRUE(rows.ok()) << rows.error();
  ASSERT_EQ(rows.value().size(), 1u);
  EXPECT_EQ(rows.value()[0].id, ended);
  EXPECT_EQ(rows.value()[0].user, "alice");
  EXPECT_EQ(rows.value()[0].state, JobState::kCancelled);
  EXPECT_EQ(rows.value()[0].reason, "idle for 30 min");
  EXPECT_EQ(rows.value()[0].gpu_model, "H100");
  EXPECT_TRUE(store_->ReportRows(6000).value().empty());
  // One user's rows, chosen by the query.
  EXPECT_EQ(store_->ReportRows(4000, "alice").value().size(), 1u);
  EXPECT_TRUE(store_->ReportRows(4000, "bob").value().empty());
  EXPECT_TRUE(store_->ReportRows(4000, "alice' OR '1'='1").value().empty());
  // In pages by id.
  const int64_t later = store_->SubmitJob(Job("bob")).value();
  ASSERT_TRUE(
      store_->Transition(later, JobState::kPending, JobState::kCancelled, done, 5000).value());
  ASSERT_TRUE(store_->PutJobUsage({{later, "z", "", "H100", 0.2, 0.1, 6000}}).ok());
  auto first = store_->ReportRows(4000, "", 0, 1);
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_EQ(first.value().size(), 1u);
  EXPECT_EQ(first.value()[0].id, ended);
  auto next = store_->ReportRows(4000, "", ended, 1);
  ASSERT_TRUE(next.ok()) << next.error();
  ASSERT_EQ(next.value().size(), 1u);
  EXPECT_EQ(next.value()[0].id, later);
  EXPECT_TRUE(store_->ReportRows(4000, "", later, 1).value().empty());
  EXPECT_EQ(store_->ReportRows(4000).value().size(), 2u);
}


// --- PostgreSQL only: leadership among the controllers that share a store, and a server that
// goes away.

using Clock = std::chrono::steady_clock;

int64_t MsSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

TEST_F(PgStoreTest, LeaseIsExclusiveAndExpires) {
  std::unique_ptr<Store> b = Connect();
  ASSERT_NE(b, nullptr);
  constexpr int64_t kLeaseMs = 1000;
  const Clock::time_point asked = Clock::now();
  auto first = store_->TryLead("ctl-a", "http://a:7070", kLeaseMs);
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_TRUE(first.value().has_value()) << "nobody held the lease";
  const int64_t e = *first.value();
  EXPECT_GE(e, 1);

  auto refused = b->TryLead("ctl-b", "http://b:7070", kLeaseMs);
  ASSERT_TRUE(refused.ok()) << refused.error();
  if (refused.value().has_value()) {
    // Only a machine stalled for the whole lease may grant it again this soon.
    ASSERT_GE(MsSince(asked), kLeaseMs) << "B took A's unexpired lease";
    GTEST_SKIP() << "the machine stalled for longer than the lease: nothing is tested";
  }
  auto leader = b->Leader();
  ASSERT_TRUE(leader.ok()) << leader.error();
  EXPECT_EQ(leader.value().holder, "ctl-a");
  EXPECT_EQ(leader.value().url, "http://a:7070");
  EXPECT_EQ(leader.value().epoch, e);
  if (MsSince(asked) < kLeaseMs - 100) {
    EXPECT_GT(leader.value().expires_in_ms, 0);
  }
  EXPECT_LE(leader.value().expires_in_ms, kLeaseMs);

  std::this_thread::sleep_for(std::chrono::milliseconds(kLeaseMs + 200 - MsSince(asked)));
  leader = b->Leader();
  ASSERT_TRUE(leader.ok()) << leader.error();
  EXPECT_EQ(leader.value().holder, "ctl-a");
  EXPECT_LE(leader.value().expires_in_ms, 0) << "the lease ran out";
  auto second = b->TryLead("ctl-b", "http://b:7070", kLeaseMs);
  ASSERT_TRUE(second.ok()) << second.error();
  ASSERT_TRUE(second.value().has_value()) << "A's lease expired 200 ms ago";
  EXPECT_EQ(*second.value(), e + 1);
  leader = store_->Leader();
  ASSERT_TRUE(leader.ok()) << leader.error();
  EXPECT_EQ(leader.value().holder, "ctl-b");
  EXPECT_EQ(leader.value().url, "http://b:7070");
  EXPECT_EQ(leader.value().epoch, e + 1);
  EXPECT_GT(leader.value().expires_in_ms, 0);
}

TEST_F(PgStoreTest, PausedLeaderIsFenced) {
  std::unique_ptr<Store> b = Connect();
  ASSERT_NE(b, nullptr);
  constexpr int64_t kLeaseMs = 1500;
  auto led = store_->TryLead("ctl-a", "http://a:7070", kLeaseMs);
  const Clock::time_point taken = Clock::now();
  ASSERT_TRUE(led.ok()) << led.error();
  ASSERT_TRUE(led.value().has_value());
  const int64_t e = *led.value();
  Store& a = *store_;
  // What A writes while it leads.
  const int64_t job = a.SubmitJob(Job("alice")).value();
  TokenRecord carol;
  carol.sha256 = std::string(64, 'a');
  ASSERT_TRUE(a.AddUser("carol", false, carol).ok());
  TokenRecord join;
  join.sha256 = std::string(64, 'c');
  join.kind = TokenKind::kJoin;
  ASSERT_TRUE(a.AddToken(join).ok());
  TokenRecord node_token;
  node_token.sha256 = std::string(64, 'd');
  node_token.kind = TokenKind::kNode;
  node_token.node = "gpu-x";
  ASSERT_TRUE(a.AddToken(node_token).ok());
  ScaleNodeRecord scale;
  scale.name = "gf-1";
  scale.group = "v100";
  scale.state = "creating";
  ASSERT_TRUE(a.PutScaleNode(scale).ok());
  NodeRecord node;
  node.name = "gpu-a";
  node.gpus = 8;
  node.state = "READY";
  ASSERT_TRUE(a.PutNode(node).ok());
  if (MsSince(taken) >= kLeaseMs) {  // a loaded machine, not a fault of the store
    GTEST_SKIP() << "A's setup outlasted its lease (" << MsSince(taken) << " ms): nothing to test";
  }

  // A pauses; its lease runs out and B takes over.
  std::this_thread::sleep_for(std::chrono::milliseconds(kLeaseMs + 200 - MsSince(taken)));
  auto took = b->TryLead("ctl-b", "http://b:7070", 60000);
  ASSERT_TRUE(took.ok()) << took.error();
  ASSERT_TRUE(took.value().has_value()) << "A's lease has expired";
  EXPECT_EQ(*took.value(), e + 1);

  // What B sees before A wakes up.
  JobFilter all;
  all.limit = 10000;
  auto snapshot = [&] {
    // (Each list is held in a variable: a range-for over a temporary Result's value() dangles.)
    std::ostringstream out;
    const std::vector<JobRecord> jobs = b->ListJobs(all).value();
    for (const JobRecord& j : jobs) {
      out << "job " << j.id << " " << StateName(j.state) << " " << j.node << " epoch " << j.epoch
          << " events " << b->Events(j.id).value().size() << " usage "
          << b->GetJobUsage(j.id).value().has_value() << "\n";
    }
    out << "audit " << b->Events(0).value().size() << "\n";
    const std::vector<NodeRecord> nodes = b->Nodes().value();
    for (const NodeRecord& n : nodes) {
      out << "node " << n.name << " " << n.state << " " << n.last_seen_ms << "\n";
    }
    const std::vector<ScaleNodeRecord> scale_nodes = b->ScaleNodes().value();
    for (const ScaleNodeRecord& n : scale_nodes) out << "scale " << n.name << " " << n.state << "\n";
    const std::vector<UserInfo> users = b->Users().value();
    for (const UserInfo& u : users) out << "user " << u.name << " " << u.tokens << "\n";
    const std::vector<TokenRecord> tokens = b->Tokens().value();
    for (const TokenRecord& t : tokens) out << "token " << t.sha256 << "\n";
    return out.str();
  };
  const std::string before = snapshot();

  // A wakes up: every write it tries is refused.
  ExpectFenced(a.SubmitJob(Job("bob")), "SubmitJob");
  JobUpdate placed;
  placed.placement = std::vector<RankPlacement>{{"gpu-a", {0, 1}}};
  placed.bump_epoch = true;
  ExpectFenced(a.Transition(job, JobState::kPending, JobState::kScheduled, placed, 2000),
               "Transition");
  ExpectFenced(a.TransitionAll({{job, JobState::kPending, JobState::kCancelled, {}}}, 2000),
               "TransitionAll");
  ExpectFenced(a.PutJobUsage({{job, "x", "", "V100", 1.0, 0.5, 2000}}), "PutJobUsage");
  node.last_seen_ms = 2000;
  node.state = "LOST";
  ExpectFenced(a.PutNode(node), "PutNode");
  scale.state = "retiring";
  ExpectFenced(a.PutScaleNode(scale), "PutScaleNode");
  ExpectFenced(a.DeleteScaleNode("gf-1"), "DeleteScaleNode");
  ExpectFenced(a.PutUser("dave", std::string(64, 'e'), false), "PutUser");
  TokenRecord erin;
  erin.sha256 = std::string(64, 'f');
  ExpectFenced(a.AddUser("erin", false, erin), "AddUser");
  ExpectFenced(a.RemoveUser("carol"), "RemoveUser");
  TokenRecord more = carol;
  more.sha256 = std::string(64, '1');
  more.user = "carol";
  ExpectFenced(a.AddToken(more), "AddToken");
  ExpectFenced(a.RevokeToken(TokenId(carol.sha256)), "RevokeToken");
  ExpectFenced(a.RevokeNodeTokens("gpu-x"), "RevokeNodeTokens");
  TokenRecord joined;
  joined.sha256 = std::string(64, '2');
  joined.kind = TokenKind::kNode;
  joined.node = "gpu-y";
  ExpectFenced(a.ExchangeJoinToken(join.sha256, joined, 2000), "ExchangeJoinToken");
  ExpectFenced(a.Audit(0, "root", "user added", "erin", 2000), "Audit");
  ExpectFenced(a.Audit(job, "root", "note", "", 2000), "Audit of a job");

  // Nothing A tried is in the database.
  EXPECT_EQ(snapshot(), before);
  auto renewed = a.RenewLead(e, 60000);
  ASSERT_TRUE(renewed.ok()) << renewed.error();
  EXPECT_FALSE(renewed.value()) << "the lease has passed to epoch " << e + 1;
  auto again = a.TryLead("ctl-a", "http://a:7070", 60000);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_FALSE(again.value().has_value()) << "B holds the lease";
  ExpectFenced(a.SubmitJob(Job("bob")), "SubmitJob after a refused TryLead");
  EXPECT_EQ(b->Leader().value().holder, "ctl-b");
  // B writes.
  auto moved = b->Transition(job, JobState::kPending, JobState::kScheduled, placed, 3000);
  ASSERT_TRUE(moved.ok()) << moved.error();
  EXPECT_TRUE(moved.value());
  EXPECT_TRUE(b->SubmitJob(Job("bob")).ok());
  EXPECT_TRUE(b->RenewLead(e + 1, 60000).value());
}

TEST_F(PgStoreTest, ResignLetsAStandbyLeadAtOnce) {
  std::unique_ptr<Store> b = Connect();
  std::unique_ptr<Store> c = Connect();
  ASSERT_NE(b, nullptr);
  ASSERT_NE(c, nullptr);
  auto led = store_->TryLead("ctl-a", "http://a:7070", 60000);
  ASSERT_TRUE(led.ok()) << led.error();
  ASSERT_TRUE(led.value().has_value());
  const int64_t e = *led.value();
  ASSERT_TRUE(store_->SubmitJob(Job("alice")).ok());
  EXPECT_FALSE(b->TryLead("ctl-b", "http://b:7070", 60000).value().has_value());
  auto resigned = store_->ResignLead(e);
  ASSERT_TRUE(resigned.ok()) << resigned.error();
  EXPECT_TRUE(resigned.value());
  auto took = b->TryLead("ctl-b", "http://b:7070", 60000);
  ASSERT_TRUE(took.ok()) << took.error();
  ASSERT_TRUE(took.value().has_value()) << "A resigned: its lease is over now, not in 60 s";
  EXPECT_EQ(*took.value(), e + 1);
  auto leader = c->Leader();
  ASSERT_TRUE(leader.ok()) << leader.error();
  EXPECT_EQ(leader.value().holder, "ctl-b");
  EXPECT_EQ(leader.value().epoch, e + 1);
  EXPECT_GT(leader.value().expires_in_ms, 50000);
  ExpectFenced(store_->SubmitJob(Job("alice")), "SubmitJob after resigning");
  EXPECT_TRUE(b->SubmitJob(Job("bob")).ok());
  // A late resignation of a former epoch does not end the current leader's lease.
  auto stale = store_->ResignLead(e);
  ASSERT_TRUE(stale.ok()) << stale.error();
  auto standby = c->TryLead("ctl-c", "http://c:7070", 60000);
  ASSERT_TRUE(standby.ok()) << standby.error();
  EXPECT_FALSE(standby.value().has_value()) << "B still holds the lease of epoch " << e + 1;
  EXPECT_EQ(c->Leader().value().holder, "ctl-b");
  EXPECT_TRUE(b->SubmitJob(Job("bob")).ok());
  JobFilter all;
  EXPECT_EQ(c->ListJobs(all).value().size(), 3u);
}

TEST_F(PgStoreTest, ConcurrentLeadersNeverShareAnEpoch) {
  constexpr int kStores = 4;
  std::vector<std::unique_ptr<Store>> stores;
  for (int i = 0; i < kStores; ++i) {
    stores.push_back(Connect());
    ASSERT_NE(stores.back(), nullptr);
  }
  std::mutex mutex;
  std::vector<std::vector<int64_t>> granted(kStores);  // by store, in the order granted
  std::vector<std::string> errors;
  const Clock::time_point end = Clock::now() + std::chrono::milliseconds(2000);
  std::vector<std::thread> threads;
  for (int i = 0; i < kStores; ++i) {
    threads.emplace_back([&, i] {
      std::mt19937 random(i);
      Store& store = *stores[i];
      const std::string holder = "ctl-" + std::to_string(i);
      while (Clock::now() < end) {
        auto epoch = store.TryLead(holder, "", 40);
        if (!epoch.ok()) {
          std::lock_guard<std::mutex> lock(mutex);
          errors.push_back("TryLead: " + epoch.error());
          continue;
        }
        if (!epoch.value().has_value()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(random() % 5));
          continue;
        }
        {
          std::lock_guard<std::mutex> lock(mutex);
          granted[i].push_back(*epoch.value());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(random() % 10));
        if (random() % 2 == 0) {
          auto resigned = store.ResignLead(*epoch.value());
          if (!resigned.ok()) {
            std::lock_guard<std::mutex> lock(mutex);
            errors.push_back("ResignLead: " + resigned.error());
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(errors.empty()) << errors.size() << " errors, the first: " << errors.front();
  std::vector<int64_t> all;
  for (int i = 0; i < kStores; ++i) {
    for (size_t k = 1; k < granted[i].size(); ++k) {
      EXPECT_LT(granted[i][k - 1], granted[i][k]) << "store " << i << "'s epochs go back";
    }
    all.insert(all.end(), granted[i].begin(), granted[i].end());
  }
  ASSERT_GE(all.size(), 10u) << "too few grants to tell anything";
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end())
      << "an epoch was granted twice";
  // Each grant is one more than the last: no epoch is skipped either.
  EXPECT_EQ(all.back() - all.front() + 1, static_cast<int64_t>(all.size()));
  auto leader = store_->Leader();
  ASSERT_TRUE(leader.ok()) << leader.error();
  EXPECT_EQ(leader.value().epoch, all.back());
}

TEST_F(PgStoreTest, ConnectionLossIsUnavailableThenRecovers) {
  ASSERT_NO_FATAL_FAILURE(Lead());
  const int64_t id = store_->SubmitJob(Job("alice")).value();
  std::string error;
  ASSERT_TRUE(server_->Stop(/*immediate=*/true, &error)) << error;

  for (int attempt = 0; attempt < 3; ++attempt) {
    Clock::time_point start = Clock::now();
    auto submitted = store_->SubmitJob(Job("bob"));
    EXPECT_LT(MsSince(start), 5000) << "a call to a server that is down must not hang";
    ASSERT_FALSE(submitted.ok()) << "the server is down";
    EXPECT_EQ(submitted.failure().code, core::ErrorCode::kUnavailable) << submitted.error();
    start = Clock::now();
    auto got = store_->GetJob(id);
    EXPECT_LT(MsSince(start), 5000);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.failure().code, core::ErrorCode::kUnavailable) << got.error();
    auto moved = store_->Transition(id, JobState::kPending, JobState::kScheduled, {}, 10);
    ASSERT_FALSE(moved.ok());
    EXPECT_EQ(moved.failure().code, core::ErrorCode::kUnavailable) << moved.error();
    EXPECT_FALSE(store_->Leader().ok());
  }

  ASSERT_TRUE(server_->Start(&error)) << error;
  // A call may still meet the broken connection; a later one reconnects.
  const Clock::time_point restarted = Clock::now();
  core::Result<std::optional<JobRecord>> got = store_->GetJob(id);
  int failures = 0;
  while (!got.ok() && MsSince(restarted) < 10000) {
    EXPECT_EQ(got.failure().code, core::ErrorCode::kUnavailable) << got.error();
    ++failures;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    got = store_->GetJob(id);
  }
  ASSERT_TRUE(got.ok()) << "still failing 10 s after the server came back: " << got.error();
  EXPECT_LE(failures, 1) << "one call meets the broken connection, the next reconnects";
  ASSERT_TRUE(got.value().has_value()) << "a committed job survives the server's crash";
  EXPECT_EQ(got.value()->user, "alice");
  JobFilter all;
  EXPECT_EQ(store_->ListJobs(all).value().size(), 1u) << "no failed submit was committed";
  // Still the leader (the lease outlived the outage): writes go on.
  auto submitted = store_->SubmitJob(Job("bob"));
  ASSERT_TRUE(submitted.ok()) << submitted.error();
  EXPECT_TRUE(
      store_->Transition(id, JobState::kPending, JobState::kScheduled, {}, 20).value());
  EXPECT_EQ(store_->ListJobs(all).value().size(), 2u);
  EXPECT_TRUE(store_->RenewLead(epoch_, 60000).value());
}

// Found by a review: leadership shared the store's one connection, so a renewal waited behind
// any call in flight (here a write waiting up to lock_timeout for a job's row, holding its fence
// on the lease row), which could outlast the default 3 s lease and hand the lead over from a
// healthy controller.
TEST_F(PgStoreTest, ARenewalNeverWaitsBehindACallInFlightOnTheSameStore) {
  auto led = store_->TryLead("ctl-a", "http://a:7070", 60000);
  ASSERT_TRUE(led.ok()) << led.error();
  ASSERT_TRUE(led.value().has_value());
  const int64_t id = store_->SubmitJob(Job("alice")).value();
  PgTestServer& server = *server_;
  const std::string db = dbname_;
  const auto count = [&](const std::string& sql) {
    std::string out;
    server.Psql(sql, db, &out);
    return out.substr(0, out.find('\n'));
  };
  // Another session holds the job's row for 3 s: a transition of it waits (at most lock_timeout,
  // 2 s) inside its fenced transaction.
  std::thread holder([&server, db, id] {
    server.Psql("BEGIN; SELECT 1 FROM jobs WHERE id=" + std::to_string(id) +
                    " FOR UPDATE; SELECT pg_sleep(3)",
                db);
  });
  const Clock::time_point began = Clock::now();
  const std::string row_held =
      "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(3)%' AND "
      "state='active' AND pid<>pg_backend_pid()";
  while (count(row_held) != "1" && MsSince(began) < 2000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::atomic<bool> write_done{false};
  std::thread writer([&] {
    (void)store_->Transition(id, JobState::kPending, JobState::kCancelled, {}, 2000);
    write_done = true;
  });
  const std::string waiting =
      "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type='Lock' AND "
      "datname=current_database()";
  while (count(waiting) != "1" && !write_done && MsSince(began) < 2500) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const bool write_waiting = count(waiting) == "1" && !write_done;
  auto renewed = store_->RenewLead(*led.value(), 60000);
  auto leader = store_->Leader();
  const bool write_still_waiting = !write_done;
  writer.join();
  holder.join();
  if (!write_waiting) GTEST_SKIP() << "the write never waited for the row: nothing is tested";
  ASSERT_TRUE(renewed.ok()) << renewed.error();
  EXPECT_TRUE(renewed.value());
  ASSERT_TRUE(leader.ok()) << leader.error();
  EXPECT_EQ(leader.value().holder, "ctl-a");
  EXPECT_TRUE(write_still_waiting)
      << "the renewal and the leader's lookup waited for the write in flight";
}

// A former leader paused in the middle of sending a pipelined batch holds the lease row's lock
// (FOR KEY SHARE) with no Sync, so no idle timeout ends its session: standbys would fail on
// lock_timeout forever. Simulated here by a session of its own that takes the lock and sleeps.
// A standby ends such a session once the lease has expired, and never before.
TEST_F(PgStoreTest, AStuckHolderOfTheLeaseRowIsEndedOnceTheLeaseExpires) {
  std::unique_ptr<Store> b = Connect();
  ASSERT_NE(b, nullptr);
  constexpr int64_t kLeaseMs = 4000;
  auto led = store_->TryLead("ctl-a", "http://a:7070", kLeaseMs);
  const Clock::time_point taken = Clock::now();
  ASSERT_TRUE(led.ok()) << led.error();
  ASSERT_TRUE(led.value().has_value());
  const int64_t e = *led.value();
  PgTestServer& server = *server_;
  const std::string db = dbname_;
  auto holders = [&] {
    std::string out;
    server.Psql(
        "SELECT count(*) FROM pg_locks WHERE relation='leader'::regclass AND "
        "mode='RowShareLock' AND granted",
        db, &out);
    return out.substr(0, out.find_first_of("\n"));
  };
  // The stuck session; ended at the end of the test at the latest.
  struct Holder {
    PgTestServer& server;
    std::string db;
    std::thread thread;
    ~Holder() {
      server.Psql(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
          "query LIKE '%pg_sleep(29)%' AND pid<>pg_backend_pid()",
          db);
      thread.join();
    }
  } holder{server, db, std::thread([&server, db] {
             server.Psql("BEGIN; SELECT 1 FROM leader WHERE id=1 FOR SHARE; SELECT pg_sleep(29)",
                         db);
           })};
  while (holders() != "1" && MsSince(taken) < 2000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(holders(), "1") << "the stuck session did not take the lock";

  // The lease runs: B waits out lock_timeout, is refused, and ends nobody.
  auto refused = b->TryLead("ctl-b", "http://b:7070", 60000);
  if (MsSince(taken) >= kLeaseMs - 200) {
    GTEST_SKIP() << "the machine stalled for most of the lease: nothing is tested";
  }
  ASSERT_TRUE(refused.ok()) << refused.error();
  EXPECT_FALSE(refused.value().has_value()) << "A's lease has not expired";
  EXPECT_EQ(holders(), "1") << "a holder was ended while the lease ran";

  // The lease has expired: B ends the stuck session and takes over, within lock_timeout and a
  // little more.
  std::this_thread::sleep_for(std::chrono::milliseconds(kLeaseMs + 100 - MsSince(taken)));
  const Clock::time_point asked = Clock::now();
  auto took = b->TryLead("ctl-b", "http://b:7070", 60000);
  ASSERT_TRUE(took.ok()) << took.error();
  ASSERT_TRUE(took.value().has_value()) << "A's lease has expired";
  EXPECT_EQ(*took.value(), e + 1);
  EXPECT_LT(MsSince(asked), 5000);
  EXPECT_EQ(holders(), "0");
  ExpectFenced(store_->SubmitJob(Job("alice")), "SubmitJob of the former leader");
  auto submitted = b->SubmitJob(Job("bob"));
  ASSERT_TRUE(submitted.ok()) << submitted.error();
}

// libpq passes text as C strings: a value with a NUL byte is refused, never stored cut short.
TEST_F(PgStoreTest, TextWithANulByteIsRefusedNotCutShort) {
  ASSERT_NO_FATAL_FAILURE(Lead());
  JobRecord job = Job("alice");
  job.name = std::string("ab\0cd", 5);
  auto submitted = store_->SubmitJob(job);
  ASSERT_FALSE(submitted.ok());
  EXPECT_EQ(submitted.failure().code, core::ErrorCode::kInvalid) << submitted.error();
  EXPECT_EQ(submitted.failure().field, "name") << submitted.error();
  TokenRecord token;
  token.sha256 = std::string(64, 'a');
  auto added = store_->AddUser(std::string("car\0ol", 6), false, token);
  ASSERT_FALSE(added.ok());
  EXPECT_EQ(added.failure().code, core::ErrorCode::kInvalid) << added.error();
  EXPECT_EQ(added.failure().field, "name") << added.error();
  auto audited = store_->Audit(0, "root", "note", std::string("x\0y", 3), 1000);
  ASSERT_FALSE(audited.ok());
  EXPECT_EQ(audited.failure().code, core::ErrorCode::kInvalid) << audited.error();
  JobFilter all;
  EXPECT_TRUE(store_->ListJobs(all).value().empty());
  EXPECT_TRUE(store_->Users().value().empty());
  EXPECT_TRUE(store_->Events(0).value().empty());
  // The store goes on.
  EXPECT_TRUE(store_->SubmitJob(Job("alice")).ok());
}

// A transition batch with data PostgreSQL refuses (a NUL byte, checked here; text not valid in
// the database's encoding, refused by the server mid-pipeline) fails whole, as kInvalid, and
// changes nothing; the connection goes on.
TEST_F(PgStoreTest, ATransitionBatchWithBadTextChangesNothingAndTheStoreGoesOn) {
  ASSERT_NO_FATAL_FAILURE(Lead());
  const int64_t a = store_->SubmitJob(Job("alice")).value();
  const int64_t b = store_->SubmitJob(Job("bob")).value();
  JobUpdate placed;
  placed.placement = std::vector<RankPlacement>{{"n1", {0}}};
  for (const std::string& bad : {std::string("x\0y", 3), std::string("bad \xff\xfe reason")}) {
    JobUpdate cancel;
    cancel.reason = bad;
    auto done = store_->TransitionAll({{a, JobState::kPending, JobState::kScheduled, placed},
                                       {b, JobState::kPending, JobState::kCancelled, cancel}},
                                      100);
    ASSERT_FALSE(done.ok());
    EXPECT_EQ(done.failure().code, core::ErrorCode::kInvalid) << done.error();
    EXPECT_EQ(store_->GetJob(a).value()->state, JobState::kPending);
    EXPECT_TRUE(store_->GetJob(a).value()->placement.empty());
    EXPECT_EQ(store_->Events(a).value().size(), 1U);
    EXPECT_EQ(store_->GetJob(b).value()->state, JobState::kPending);
  }
  auto done = store_->TransitionAll({{a, JobState::kPending, JobState::kScheduled, placed}}, 200);
  ASSERT_TRUE(done.ok()) << done.error();
  EXPECT_EQ(done.value(), std::vector<bool>{true});
  EXPECT_EQ(store_->GetJob(a).value()->node, "n1");
}

// libpq's messages about a connection string it cannot parse may quote the password, or the
// whole string: such a message is left out. (No server is needed: nothing connects.)
// Found by a review: `--store postgresql://u:PASSWORD@...` left the password in the controller's
// command line, which every local account (every job) reads in /proc/PID/cmdline.
TEST(StoreOpen, APasswordInAConnectionStringIsMaskedInPlace) {
  const std::pair<std::string, std::string> cases[] = {
      {"postgresql://u:s3cret@db.example/gpufleet", "postgresql://u:******@db.example/gpufleet"},
      {"postgres://u:p%40ss@db/x?sslmode=require", "postgres://u:******@db/x?sslmode=require"},
      {"postgresql://u@db/x?password=s3cret&x=1", "postgresql://u@db/x?password=******&x=1"},
      // key=value: all that follows the keyword (as libpq may read a space-cut password).
      {"host=db password=s3cret dbname=x", "host=db password=***************"},
      {"host=db password='s3 cret' dbname=x", "host=db password=******************"},
  };
  for (const auto& [conninfo, shown] : cases) {
    std::string text = conninfo;
    EXPECT_TRUE(MaskConnectionPassword(text.data())) << conninfo;
    EXPECT_EQ(text, shown);
  }
  for (const char* none : {"postgresql://u@/db", "host=/run/postgresql dbname=x", "/var/lib/x"}) {
    std::string text = none;
    EXPECT_FALSE(MaskConnectionPassword(text.data())) << none;
    EXPECT_EQ(text, none);
  }
}

TEST(StoreOpen, AConnectionStringThatDoesNotParseIsReportedWithoutThePassword) {
  const std::pair<std::string, std::string> cases[] = {
      {"postgresql://u:s3cr%ZZet@/db", "s3cr"},           // quotes the bad token
      {"postgresql://u:s3cret@[::1/db", "s3cret"},        // quotes the whole URI
      {"postgresql://u:s3c%00ret@/db", "s3c"},            // forbidden %00
      {"postgresql://u@/db?password=s3cr%ZZet", "s3cr"},  // in the query
      {"host=/nowhere password=s3c ret", "ret"},          // unquoted space: "ret" is quoted
      {"host=/nowhere password='s3cret", "s3cret"},       // unterminated quote
  };
  for (const auto& [conninfo, secret] : cases) {
    auto store = OpenPostgresStore(conninfo);
    ASSERT_FALSE(store.ok()) << conninfo;
    EXPECT_EQ(store.failure().code, core::ErrorCode::kInvalid) << store.error();
    EXPECT_NE(store.error().find("cannot parse the --store connection string"), std::string::npos)
        << store.error();
    EXPECT_EQ(store.error().find(secret), std::string::npos) << store.error();
  }
  // libpq's message stays when it shows nothing of the password.
  auto store = OpenPostgresStore("postgresql://u:s3cret@/db?bogus=1");
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().find("bogus"), std::string::npos) << store.error();
  EXPECT_EQ(store.error().find("s3cret"), std::string::npos) << store.error();
}

TEST_F(PgStoreTest, AnUnreachableServerIsAClearErrorWithoutThePassword) {
  const std::string nowhere = server_->dir() + "-gone";
  auto store = OpenPostgresStore("host=" + nowhere + " user=gpufleet password=hunter2 dbname=x");
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().find(nowhere), std::string::npos) << store.error();
  EXPECT_EQ(store.error().find("hunter2"), std::string::npos) << store.error();
  auto uri = OpenPostgresStore("postgresql://gpufleet:hunter2@/x?host=" + nowhere);
  ASSERT_FALSE(uri.ok());
  EXPECT_EQ(uri.error().find("hunter2"), std::string::npos) << uri.error();
}

}  // namespace
}  // namespace gpufleet::store

namespace gpufleet::store {
namespace {

// Found by a review: a --store without sslmode connected to a remote server with libpq's
// "prefer", which falls back to plain text and never checks the server, without a word.
TEST(PostgresTransport, WarnsOfARemoteServerUnencryptedOrUnverified) {
  EXPECT_FALSE(PostgresTransportWarning("/var/run/postgresql", false, "prefer"));
  EXPECT_FALSE(PostgresTransportWarning("127.0.0.1", false, "disable"));
  EXPECT_FALSE(PostgresTransportWarning("localhost", false, "prefer"));
  EXPECT_FALSE(PostgresTransportWarning("db.example", true, "verify-full"));
  EXPECT_FALSE(PostgresTransportWarning("db.example", true, "verify-ca"));
  auto clear = PostgresTransportWarning("db.example", false, "prefer");
  ASSERT_TRUE(clear);
  EXPECT_NE(clear->find("not encrypted"), std::string::npos) << *clear;
  auto unchecked = PostgresTransportWarning("db.example", true, "require");
  ASSERT_TRUE(unchecked);
  EXPECT_NE(unchecked->find("sslmode=require"), std::string::npos) << *unchecked;
  EXPECT_TRUE(PostgresTransportWarning("127.0.0.1.db.example", false, "prefer"));
}

}  // namespace
}  // namespace gpufleet::store

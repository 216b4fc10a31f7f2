#include "store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

namespace gpufleet::store {
namespace {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpufleet-store-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    auto store = OpenSqliteStore(dir_.string());
    ASSERT_TRUE(store.ok()) << store.error();
    store_ = std::move(store).value();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
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
  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(StoreTest, SubmitThenGetRoundTrips) {
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

TEST_F(StoreTest, ClientTokenMakesSubmitIdempotent) {
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
}

TEST_F(StoreTest, ConcurrentSubmitsAreGroupCommittedAndAllKept) {
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

TEST_F(StoreTest, TransitionsAreCompareAndSetAndLogged) {
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

TEST_F(StoreTest, TransitionAllCommitsTogetherAndReportsEachCompareAndSet) {
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

TEST_F(StoreTest, LimitsAndRestartableRoundTrip) {
  JobRecord j = Job("carol");
  j.restartable = true;
  j.cpu_milli = 2500;
  j.memory_mib = 4096;
  const JobRecord got = *store_->GetJob(store_->SubmitJob(j).value()).value();
  EXPECT_TRUE(got.restartable);
  EXPECT_EQ(got.cpu_milli, 2500);
  EXPECT_EQ(got.memory_mib, 4096);
}

TEST_F(StoreTest, NodeRegistryUpsertsByNameAndKeepsFirstSeen) {
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

TEST_F(StoreTest, ListFiltersAndPages) {
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
}

TEST_F(StoreTest, ListSortsByAnyKeyFiltersByQueueAndModelAndCounts) {
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

TEST_F(StoreTest, CommittedJobsSurviveReopening) {
  const int64_t id = store_->SubmitJob(Job("alice")).value();
  ASSERT_TRUE(store_->PutUser("alice", "hash-a", false).value());
  store_.reset();
  auto reopened = OpenSqliteStore(dir_.string());
  ASSERT_TRUE(reopened.ok()) << reopened.error();
  EXPECT_EQ(reopened.value()->GetJob(id).value()->user, "alice");
  auto user = reopened.value()->UserByToken("hash-a").value();
  ASSERT_TRUE(user.has_value());
  EXPECT_EQ(user->name, "alice");
  EXPECT_FALSE(reopened.value()->UserByToken("nope").value().has_value());
  store_ = std::move(reopened).value();
}

TEST_F(StoreTest, UsersHaveSeveralTokensThatCanBeRevokedOneByOne) {
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

TEST_F(StoreTest, AJoinTokenIsExchangedOnceAndOnlyBeforeItExpires) {
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

TEST_F(StoreTest, AuditEventsNameTheirActor) {
  ASSERT_TRUE(store_->Audit(0, "root", "user added", "carol", 1000).ok());
  const auto events = store_->Events(0).value();
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].actor, "root");
  EXPECT_EQ(events[0].what, "user added");
  const int64_t id = store_->SubmitJob(Job("alice")).value();
  EXPECT_EQ(store_->Events(id).value().at(0).actor, "alice");
}

TEST_F(StoreTest, APlacementIsOneRowPerRankAndAnEmptyOneUnplacesTheJob) {
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

TEST_F(StoreTest, SchemaNineMovesOldPlacementsIntoRankRows) {
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
      "ALTER TABLE jobs ADD COLUMN node TEXT NOT NULL DEFAULT '';"
      "ALTER TABLE jobs ADD COLUMN gpu_indices TEXT NOT NULL DEFAULT '[]';"
      "UPDATE jobs SET node='a,b', gpu_indices='[0,1,2,3]' WHERE id=" + std::to_string(multi) +
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
}

TEST_F(StoreTest, ScaleNodesAreReplacedByNameAndSurviveReopening) {
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
  store_.reset();
  store_ = std::move(OpenSqliteStore(dir_.string())).value();
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

TEST_F(StoreTest, NewerSchemaIsRefusedClearly) {
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

TEST_F(StoreTest, KeepsUsageSeriesAndListsEndedJobsForTheReport) {
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
}

}  // namespace
}  // namespace gpufleet::store

#include "controller/log_retention.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gpufleet::controller {
namespace {

using store::JobOwner;
using store::JobState;

constexpr int64_t kDay = 24 * 3600'000LL;
constexpr int64_t kNow = 100 * kDay;

JobLogs::Held Held(int64_t id, int64_t bytes) { return {id, bytes, {}}; }
JobOwner Ended(int64_t id, const std::string& user, int64_t end_ms,
               JobState state = JobState::kSucceeded) {
  return {id, user, state, end_ms};
}
std::vector<int64_t> Ids(const std::vector<LogRemoval>& removals) {
  std::vector<int64_t> ids;
  for (const LogRemoval& r : removals) ids.push_back(r.job_id);
  return ids;
}

TEST(PlanLogRemovals, RemovesEndedJobsOlderThanTheRetentionOnly) {
  LogRetention r;
  r.max_age_ms = 30 * kDay;
  const auto plan = PlanLogRemovals(
      {Held(1, 10), Held(2, 10), Held(3, 10), Held(4, 10), Held(5, 10), Held(6, 10)},
      {Ended(1, "a", kNow - 31 * kDay),
       Ended(2, "a", kNow - 29 * kDay),
       Ended(3, "a", kNow - 40 * kDay, JobState::kFailed),
       {4, "a", JobState::kRunning, 0},
       {5, "a", JobState::kPreempted, kNow - 40 * kDay},
       Ended(6, "a", kNow - 40 * kDay, JobState::kLost)},
      r, kNow);
  EXPECT_EQ(Ids(plan), (std::vector<int64_t>{1, 3, 6}))
      << "a running or requeued job's log is kept however old; a job lost for good is ended";
  EXPECT_EQ(plan[0].why, "older than 30 d");
  EXPECT_TRUE(PlanLogRemovals({Held(1, 10)}, {Ended(1, "a", 1)}, LogRetention{}, kNow).empty())
      << "no retention, no quota: everything is kept";
}

TEST(PlanLogRemovals, AUserOverQuotaLosesTheirLongestEndedJobsFirstAndNobodyElses) {
  LogRetention r;
  r.user_quota_bytes = 100 << 20;
  const int64_t mib = 1 << 20;
  // alice holds 150 MiB: 60 of a running job, 40 + 30 + 20 of ended ones.
  const auto plan = PlanLogRemovals({Held(1, 40 * mib), Held(2, 30 * mib), Held(3, 20 * mib),
                                     Held(4, 60 * mib), Held(5, 90 * mib), Held(6, 500 * mib)},
                                    {Ended(2, "alice", kNow - 3 * kDay),
                                     Ended(1, "alice", kNow - 2 * kDay),
                                     Ended(3, "alice", kNow - 5 * kDay),
                                     {4, "alice", JobState::kRunning, 0},
                                     Ended(5, "bob", kNow - 9 * kDay)},
                                    r, kNow);
  // Oldest end first: 3 (20 MiB, 130 left), then 2 (30 MiB, 100 left: within the quota).
  EXPECT_EQ(Ids(plan), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(plan[0].why, "over user alice's log quota of 100 MiB");
  // Job 6's owner is unknown to the store: never removed. Bob (90 MiB) is within his quota.
}

// Found by a review: running jobs' logs counted whole, so a user whose running jobs held the
// quota lost every ended job's log at the next sweep.
TEST(PlanLogRemovals, RunningJobsAtTheQuotaLeaveHalfOfItToEndedJobs) {
  LogRetention r;
  r.user_quota_bytes = 100 << 20;
  const int64_t mib = 1 << 20;
  // A running job holds the whole quota; three ended jobs hold 20 MiB each.
  const auto plan =
      PlanLogRemovals({Held(1, 100 * mib), Held(2, 20 * mib), Held(3, 20 * mib), Held(4, 20 * mib)},
                      {{1, "a", JobState::kRunning, 0},
                       Ended(2, "a", kNow - 3 * kDay),
                       Ended(3, "a", kNow - 2 * kDay),
                       Ended(4, "a", kNow - 1 * kDay)},
                      r, kNow);
  // 50 MiB of the running job's count: 110 in all, so the oldest ended job goes, and 40 MiB of
  // ended jobs' logs stay.
  EXPECT_EQ(Ids(plan), (std::vector<int64_t>{2}));
}

TEST(PlanLogRemovals, RunningAndJustEndedJobsAreNeverRemovedEvenOverQuota) {
  LogRetention r;
  r.user_quota_bytes = 1 << 20;
  r.max_age_ms = 1;
  const auto plan = PlanLogRemovals(
      {Held(1, 50 << 20), Held(2, 50 << 20)},
      {{1, "a", JobState::kRunning, 0}, Ended(2, "a", kNow - r.settle_ms + 1)}, r, kNow);
  EXPECT_TRUE(plan.empty()) << "job 2 ended inside the settle time: its agent may still ship";
}

std::filesystem::path TempDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gpufleet-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(JobLogs, ScanGroupsAJobsFilesAndRemoveLeavesANote) {
  const auto dir = TempDir("log-scan");
  const JobLogs logs(dir.string());
  ASSERT_TRUE(logs.Append(7, 0, "first run\n"));
  logs.KeepEarlierAttempt(7, 1, 2);
  ASSERT_TRUE(logs.Append(7, 0, "second\n"));
  ASSERT_TRUE(logs.Append(7, 3, "rank 3\n"));
  ASSERT_TRUE(logs.Append(12, 0, "x"));
  for (const char* stray : {"notes.txt", "7.log.attemptx", "07x.log", "12.rank.log", "0.log"}) {
    std::ofstream(dir / "logs" / stray) << "keep me";
  }
  const auto held = logs.Scan();
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0].job_id, 7);
  EXPECT_EQ(held[0].bytes, 10 + 7 + 7);
  EXPECT_EQ(held[0].files.size(), 3u);
  EXPECT_EQ(held[1].job_id, 12);
  EXPECT_FALSE(logs.RemovedNote(7));
  ASSERT_TRUE(logs.Remove(held[0], "[gpufleet] removed: test"));
  EXPECT_EQ(*logs.RemovedNote(7), "[gpufleet] removed: test\n");
  EXPECT_EQ(logs.Size(7, 0), 0);
  ASSERT_EQ(logs.Scan().size(), 1u);
  for (const char* stray : {"notes.txt", "7.log.attemptx", "07x.log", "12.rank.log", "0.log"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / "logs" / stray)) << stray;
  }
  std::filesystem::remove_all(dir);
}

TEST(LogSweeper, RemovesWhatThePlanSaysAndKeepsLogsOfJobsTheStoreDoesNotKnow) {
  const auto dir = TempDir("log-sweep");
  auto opened = store::OpenSqliteStore(dir.string());
  ASSERT_TRUE(opened.ok()) << opened.error();
  store::Store& st = *opened.value();
  ASSERT_TRUE(st.TryLead("test", "", 60000).ok());
  store::JobRecord job;
  job.user = "alice";
  job.argv = {"true"};
  job.submit_ms = 1;
  const int64_t old_job = st.SubmitJob(job).value();
  const int64_t running = st.SubmitJob(job).value();
  store::JobUpdate ended;
  ended.end_ms = kNow - 40 * kDay;
  ASSERT_TRUE(st.Transition(old_job, JobState::kPending, JobState::kCancelled, ended, 1).value());
  const JobLogs logs(dir.string());
  ASSERT_TRUE(logs.Append(old_job, 0, std::string(1000, 'o')));
  ASSERT_TRUE(logs.Append(running, 0, std::string(10, 'r')));
  ASSERT_TRUE(logs.Append(424242, 0, "nobody's"));
  LogRetention r;
  r.max_age_ms = 30 * kDay;
  LogSweeper sweeper(st, logs, r);
  const LogSweepStats stats = sweeper.SweepOnce(kNow);
  EXPECT_EQ(stats.error, "");
  EXPECT_EQ(stats.jobs_held, 3);
  EXPECT_EQ(stats.bytes_held, 1000 + 10 + 8);
  EXPECT_EQ(stats.unknown_jobs, 1);
  EXPECT_EQ(stats.jobs_removed, 1);
  EXPECT_EQ(stats.bytes_removed, 1000);
  EXPECT_EQ(logs.Size(old_job, 0), 0);
  EXPECT_EQ(logs.Size(running, 0), 10);
  EXPECT_EQ(logs.Size(424242, 0), 8);
  ASSERT_TRUE(logs.RemovedNote(old_job));
  EXPECT_NE(logs.RemovedNote(old_job)->find("(1000 bytes) was removed on 1970-04-11 00:00 UTC: "
                                            "older than 30 d"),
            std::string::npos)
      << *logs.RemovedNote(old_job);
  EXPECT_EQ(sweeper.SweepOnce(kNow).jobs_removed, 0) << "nothing left to remove";
  std::filesystem::remove_all(dir);
}

// A job of alice's that was cancelled 40 days before kNow, with a 3-byte log: its id (0: failed).
int64_t JobEndedLongAgoWithALog(store::Store& st, const JobLogs& logs) {
  store::JobRecord job;
  job.user = "alice";
  job.argv = {"true"};
  job.submit_ms = 1;
  auto id = st.SubmitJob(job);
  if (!id) return 0;
  store::JobUpdate ended;
  ended.end_ms = kNow - 40 * kDay;
  auto moved = st.Transition(id.value(), JobState::kPending, JobState::kCancelled, ended, 1);
  return moved && moved.value() && logs.Append(id.value(), 0, "log") ? id.value() : 0;
}

// Found by a review: `gpufleet rm` racing a sweep (the job and its files removed after the sweep's
// scan, before its removal) left the sweep's "removed" note behind for a job that no longer exists.
TEST(LogSweeper, AJobRemovedDuringTheSweepLeavesNoNoteBehind) {
  const auto dir = TempDir("log-sweep-rm");
  auto opened = store::OpenSqliteStore(dir.string());
  ASSERT_TRUE(opened.ok()) << opened.error();
  store::Store& st = *opened.value();
  ASSERT_TRUE(st.TryLead("test", "", 60000).ok());
  const JobLogs logs(dir.string());
  const int64_t id = JobEndedLongAgoWithALog(st, logs);
  ASSERT_GT(id, 0);
  LogRetention r;
  r.max_age_ms = 30 * kDay;
  LogSweeper sweeper(st, logs, r);
  int asked = 0;
  // Asked once after the scan, then before the removal: there `rm` runs, as
  // Controller::RemoveEndedJob does it (the files and note first, then the record).
  const LogSweepStats stats = sweeper.SweepOnce(kNow, [&] {
    if (++asked == 2) {
      EXPECT_TRUE(logs.Erase(logs.Of(id, 1, 1)));
      EXPECT_EQ(st.RemoveEndedJobs({id}).value(), 1);
    }
    return false;
  });
  EXPECT_EQ(stats.error, "");
  EXPECT_EQ(asked, 2);
  EXPECT_FALSE(logs.RemovedNote(id)) << "a note outlived its job: " << *logs.RemovedNote(id);
  EXPECT_TRUE(logs.Scan().empty());
  std::filesystem::remove_all(dir);
}

// A controller shutting down stops a sweep between two removals; the next sweep removes the rest.
TEST(LogSweeper, StopsBetweenRemovalsWhenAskedAndTheNextSweepGoesOn) {
  const auto dir = TempDir("log-sweep-stop");
  auto opened = store::OpenSqliteStore(dir.string());
  ASSERT_TRUE(opened.ok()) << opened.error();
  store::Store& st = *opened.value();
  ASSERT_TRUE(st.TryLead("test", "", 60000).ok());
  const JobLogs logs(dir.string());
  for (int i = 0; i < 5; ++i) ASSERT_GT(JobEndedLongAgoWithALog(st, logs), 0);
  LogRetention r;
  r.max_age_ms = 30 * kDay;
  LogSweeper sweeper(st, logs, r);
  int asked = 0;
  // Asked once after the scan, then before each removal: stop before the third.
  EXPECT_EQ(sweeper.SweepOnce(kNow, [&] { return ++asked > 3; }).jobs_removed, 2);
  EXPECT_EQ(sweeper.SweepOnce(kNow, [] { return true; }).jobs_removed, 0);
  EXPECT_EQ(sweeper.SweepOnce(kNow).jobs_removed, 3);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpufleet::controller

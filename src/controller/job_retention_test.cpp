#include "controller/job_retention.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace gpufleet::controller {
namespace {

using store::JobState;

constexpr int64_t kDay = 24 * 3600'000LL;
constexpr int64_t kNow = 100 * kDay;

std::filesystem::path TempDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gpufleet-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Jobs ended longer ago than the retention go with their logs and any note of removed logs;
// newer and live jobs, and logs of jobs the store does not know, stay.
TEST(JobRetentionSweeper, RemovesOldEndedJobsWithTheirLogsAndNothingElse) {
  const auto dir = TempDir("job-retention");
  auto opened = store::OpenSqliteStore(dir.string());
  ASSERT_TRUE(opened.ok()) << opened.error();
  store::Store& st = *opened.value();
  const JobLogs logs(dir.string());
  store::JobRecord job;
  job.user = "alice";
  job.argv = {"true"};
  job.submit_ms = 1;
  const auto ended = [&](int64_t end_ms) {
    const int64_t id = st.SubmitJob(job).value();
    store::JobUpdate end;
    end.end_ms = end_ms;
    EXPECT_TRUE(st.Transition(id, JobState::kPending, JobState::kCancelled, end, end_ms).value());
    return id;
  };
  const int64_t old_logged = ended(kNow - 40 * kDay);
  const int64_t old_noted = ended(kNow - 35 * kDay);  // its logs removed before, a note left
  const int64_t recent = ended(kNow - 5 * kDay);
  const int64_t live = st.SubmitJob(job).value();
  ASSERT_TRUE(logs.Append(old_logged, 0, "old"));
  ASSERT_TRUE(logs.Append(old_logged, 1, "rank 1"));
  ASSERT_TRUE(logs.Append(old_noted, 0, "noted"));
  auto scanned = logs.Scan();
  ASSERT_EQ(scanned.size(), 1u + 1u);
  ASSERT_TRUE(logs.Remove(scanned[1], "removed: over the quota"));
  ASSERT_TRUE(logs.RemovedNote(old_noted));
  ASSERT_TRUE(logs.Append(recent, 0, "recent"));
  ASSERT_TRUE(logs.Append(live, 0, "live"));
  ASSERT_TRUE(logs.Append(424242, 0, "nobody's"));

  JobRetentionSweeper sweeper(st, logs, 30 * kDay);
  const JobRetentionStats stats = sweeper.SweepOnce(kNow);
  EXPECT_EQ(stats.error, "");
  EXPECT_EQ(stats.jobs_removed, 2);
  for (int64_t id : {old_logged, old_noted}) {
    EXPECT_FALSE(st.GetJob(id).value().has_value()) << id;
    EXPECT_EQ(logs.Size(id, 0), 0) << id;
    EXPECT_FALSE(logs.RemovedNote(id)) << id;
  }
  EXPECT_EQ(logs.Size(old_logged, 1), 0);
  for (int64_t id : {recent, live}) EXPECT_TRUE(st.GetJob(id).value().has_value()) << id;
  EXPECT_GT(logs.Size(recent, 0), 0);
  EXPECT_GT(logs.Size(live, 0), 0);
  EXPECT_GT(logs.Size(424242, 0), 0);
  EXPECT_EQ(sweeper.SweepOnce(kNow).jobs_removed, 0) << "nothing left";
  EXPECT_EQ(JobRetentionSweeper(st, logs, 0).SweepOnce(kNow).jobs_removed, 0) << "off";
  std::filesystem::remove_all(dir);
}

// More than a batch: every one goes, a batch at a time, and a stop between batches holds.
TEST(JobRetentionSweeper, GoesThroughManyBatchesAndStopsBetweenThemWhenAsked) {
  const auto dir = TempDir("job-retention-batches");
  auto opened = store::OpenSqliteStore(dir.string());
  ASSERT_TRUE(opened.ok()) << opened.error();
  store::Store& st = *opened.value();
  store::JobRecord job;
  job.user = "bob";
  job.argv = {"true"};
  job.submit_ms = 1;
  const int n = 2 * JobRetentionSweeper::kBatch + 10;
  for (int k = 0; k < n; ++k) {
    const int64_t id = st.SubmitJob(job).value();
    store::JobUpdate end;
    end.end_ms = kNow - 40 * kDay + k;
    ASSERT_TRUE(st.Transition(id, JobState::kPending, JobState::kCancelled, end, 1).value());
  }
  JobRetentionSweeper sweeper(st, JobLogs(dir.string()), 30 * kDay);
  int asked = 0;
  EXPECT_EQ(sweeper.SweepOnce(kNow, [&] { return ++asked > 1; }).jobs_removed,
            JobRetentionSweeper::kBatch);
  EXPECT_EQ(sweeper.SweepOnce(kNow).jobs_removed, n - JobRetentionSweeper::kBatch);
  EXPECT_TRUE(st.EndedJobIds(kNow, 10).value().empty());
  std::filesystem::remove_all(dir);
}

// Found by a review: a batch of jobs whose logs could not be removed came back first at every
// sweep, whole, and the sweep stopped there: no later job was ever removed.
TEST(JobRetentionSweeper, JobsWhoseLogsWillNotGoDoNotStopTheSweep) {
  const auto dir = TempDir("job-retention-stuck");
  auto opened = store::OpenSqliteStore(dir.string());
  ASSERT_TRUE(opened.ok()) << opened.error();
  store::Store& st = *opened.value();
  const JobLogs logs(dir.string());
  store::JobRecord job;
  job.user = "carol";
  job.argv = {"true"};
  job.submit_ms = 1;
  const int n = JobRetentionSweeper::kBatch + 20;
  std::vector<int64_t> ids;
  for (int k = 0; k < n; ++k) {
    const int64_t id = st.SubmitJob(job).value();
    store::JobUpdate end;
    end.end_ms = kNow - 40 * kDay + k;
    ASSERT_TRUE(st.Transition(id, JobState::kPending, JobState::kCancelled, end, 1).value());
    ids.push_back(id);
  }
  // The oldest batch's removal notes are directories with something in them: they will not go.
  std::filesystem::create_directories(dir / "logs");
  for (int k = 0; k < JobRetentionSweeper::kBatch; ++k) {
    const auto note = dir / "logs" / (std::to_string(ids[k]) + ".removed");
    std::filesystem::create_directories(note / "x");
  }
  JobRetentionSweeper sweeper(st, logs, 30 * kDay);
  const JobRetentionStats stats = sweeper.SweepOnce(kNow);
  EXPECT_EQ(stats.error, "");
  EXPECT_EQ(stats.jobs_removed, 20);
  EXPECT_EQ(stats.jobs_stuck, JobRetentionSweeper::kBatch);
  EXPECT_TRUE(st.GetJob(ids.front()).value().has_value()) << "its logs stayed, so it stays";
  EXPECT_FALSE(st.GetJob(ids.back()).value().has_value());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpufleet::controller

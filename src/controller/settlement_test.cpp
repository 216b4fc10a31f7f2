#include "controller/settlement.h"

#include <gtest/gtest.h>

namespace gpufleet::controller {
namespace {

using store::JobState;

RankStanding Running(const char* node) {
  RankStanding r;
  r.node = node;
  r.started = true;
  return r;
}
RankStanding Ended(const char* node, int code, bool stopped = false) {
  RankStanding r = Running(node);
  r.ended = true;
  r.exit_code = code;
  r.stopped = stopped;
  return r;
}
JobStanding RunningJob() {
  JobStanding j;
  j.running = true;
  j.queue_policy = "las-qssf";
  j.time_limit_s = 60;
  return j;
}

TEST(Settle, AJobRunsOnceEveryRankHasStarted) {
  JobStanding scheduled;
  RankStanding waiting;
  waiting.node = "b";
  EXPECT_FALSE(Settle({Running("a"), waiting}, scheduled).now_running);
  EXPECT_TRUE(Settle({Running("a"), Running("b")}, scheduled).now_running);
  EXPECT_FALSE(Settle({Running("a"), Running("b")}, RunningJob()).now_running) << "already";
  EXPECT_FALSE(Settle({Running("a"), Running("b")}, scheduled).end);
}

TEST(Settle, OneFailedRankStopsTheRestAndNamesItsNodeAsTheCause) {
  Settlement s = Settle({Ended("a", 0), Ended("b", 2), Running("c")}, RunningJob());
  EXPECT_TRUE(s.stop_the_rest);
  EXPECT_FALSE(s.end) << "not before every rank has ended";
  JobStanding stopping = RunningJob();
  stopping.stopping = true;
  EXPECT_FALSE(Settle({Ended("b", 2), Running("c")}, stopping).stop_the_rest) << "asked already";
  // c was then stopped (143): the cause is still b, which failed on its own.
  s = Settle({Ended("a", 0), Ended("c", 143, true), Ended("b", 2)}, stopping);
  ASSERT_TRUE(s.end);
  EXPECT_EQ(*s.end, JobState::kFailed);
  EXPECT_EQ(s.exit_code.value_or(-1), 2);
  EXPECT_EQ(s.reason, "node b: exit code 2");
}

TEST(Settle, EachWayOfEndingHasItsState) {
  Settlement s = Settle({Ended("a", 0)}, RunningJob());
  EXPECT_EQ(*s.end, JobState::kSucceeded);
  EXPECT_EQ(s.reason, "");

  JobStanding cancelled = RunningJob();
  cancelled.cancel = true;
  s = Settle({Ended("a", 143, true)}, cancelled);
  EXPECT_EQ(*s.end, JobState::kCancelled);
  EXPECT_EQ(s.reason, "cancelled while running");

  JobStanding timed_out = RunningJob();
  timed_out.timed_out = true;
  s = Settle({Ended("a", 143, true)}, timed_out);
  EXPECT_EQ(*s.end, JobState::kFailed);
  EXPECT_EQ(s.reason, "time limit of 60 s reached");

  JobStanding preempted = RunningJob();
  preempted.preempting = true;
  s = Settle({Ended("a", 143, true)}, preempted);
  EXPECT_EQ(*s.end, JobState::kPreempted);
  EXPECT_EQ(s.reason, "preempted by the las-qssf policy");
  JobStanding resized = preempted;  // an elastic job's resize: a preemption with its own reason
  resized.resizing = "resized: growing from 2 GPUs toward 4 (elastic 1..4)";
  s = Settle({Ended("a", 0, true)}, resized);
  EXPECT_EQ(*s.end, JobState::kPreempted);
  EXPECT_EQ(s.reason, resized.resizing);
  // A victim that finished (or failed) on its own before the stop ends as it ended.
  EXPECT_EQ(*Settle({Ended("a", 0)}, preempted).end, JobState::kSucceeded);
  EXPECT_EQ(*Settle({Ended("a", 1)}, preempted).end, JobState::kFailed);

  RankStanding lost = Running("a");
  lost.ended = lost.lost = true;
  lost.reason = "node a missed its lease";
  s = Settle({lost}, RunningJob());
  EXPECT_EQ(*s.end, JobState::kLost);
  EXPECT_FALSE(s.exit_code) << "a lost job has no exit code";
  EXPECT_EQ(s.reason, "node a missed its lease");
}

TEST(Settle, AnUnhealthyGpuEndsItLostWhenRestartableElseFailed) {
  JobStanding health = RunningJob();
  health.stopping = true;
  health.health_stop = "GPU 3 of node a: XID 79";
  Settlement s = Settle({Ended("a", 143, true)}, health);
  EXPECT_EQ(*s.end, JobState::kFailed);
  EXPECT_EQ(s.reason, health.health_stop);
  health.restartable = true;
  s = Settle({Ended("a", 143, true)}, health);
  EXPECT_EQ(*s.end, JobState::kLost);
  EXPECT_FALSE(s.exit_code);
  EXPECT_EQ(*Settle({Ended("a", 0)}, health).end, JobState::kSucceeded) << "it finished first";
}

TEST(Settle, AnOomKillIsTheReasonWithTheLimitItHit) {
  RankStanding r = Ended("a", 137);
  r.oom_kills = 1;
  JobStanding job = RunningJob();
  job.memory_mib = 512;
  Settlement s = Settle({r}, job);
  EXPECT_EQ(*s.end, JobState::kFailed);
  EXPECT_EQ(s.reason,
            "out of memory: the kernel's OOM killer ended 1 process at the job's memory limit of "
            "512 MiB (exit code 137)");
}

TEST(Settle, AnEndedJobWaitsForItsLogs) {
  RankStanding r = Ended("a", 0);
  r.log_in_flight = true;
  EXPECT_FALSE(Settle({r}, RunningJob()).end);
  r.log_in_flight = false;
  EXPECT_TRUE(Settle({r}, RunningJob()).end);
}

}  // namespace
}  // namespace gpufleet::controller

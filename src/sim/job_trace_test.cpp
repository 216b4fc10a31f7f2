#include "sim/job_trace.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace gpufleet::sim {
namespace {

TEST(GenericCsv, SortsWindowsAndKeepsFields) {
  auto trace = ParseGenericCsv(
      "id,submit_s,duration_s,num_gpus,queue,gpu_milli,cpu_milli,memory_mib\n"
      "7,500,100,2,teamA,,4000,8192\n"
      "3,100,50,1,teamB,500,,\n"
      "9,100,10,4,,,,\n"
      "1,9000,10,1,teamA,,,\n",
      "t.csv", {});
  ASSERT_TRUE(trace.ok()) << trace.error();
  const auto& jobs = trace.value().jobs;
  ASSERT_EQ(jobs.size(), 4U);
  EXPECT_EQ(jobs[0].id, 3);  // stable: equal submit times keep file order
  EXPECT_EQ(jobs[1].id, 9);
  EXPECT_EQ(jobs[0].submit_s, 0) << "counted from the first job";
  EXPECT_EQ(jobs[0].gpu_milli, 500);
  EXPECT_EQ(jobs[1].vc, "default");
  EXPECT_EQ(jobs[2].id, 7);
  EXPECT_EQ(jobs[2].submit_s, 400);
  EXPECT_EQ(jobs[2].cpu_milli_per_gpu, 4000);
  EXPECT_EQ(jobs[2].memory_mib_per_gpu, 8192);

  TraceReadOptions window;
  window.window_start_s = 300;
  window.limit = 1;
  auto windowed = ParseGenericCsv(
      "id,submit_s,duration_s,num_gpus\n1,100,5,1\n2,500,5,1\n3,600,5,1\n", "t.csv", window);
  ASSERT_TRUE(windowed.ok());
  ASSERT_EQ(windowed.value().jobs.size(), 1U);
  EXPECT_EQ(windowed.value().jobs[0].id, 2);
  EXPECT_EQ(windowed.value().jobs[0].submit_s, 0);
}

TEST(GenericCsv, BadRowsAreErrorsNamingLineAndColumn) {
  struct Case {
    const char* row;
    const char* expected;
  };
  for (const Case& c : {
           Case{"1,0,10,1\n1,5,10,1\n", "t.csv:3: column 'id' (1): duplicate id 1"},
           Case{"1,0,0,1\n", "t.csv:2: column 'duration_s' (3): must be positive"},
           Case{"1,0,-5,1\n", "must be positive"},
           Case{"1,0,9000000000000000000,1\n", "at most ten years"},
           Case{"1,9000000000000000000,10,1\n", "a hundred years"},
           Case{"1,-3,10,1\n", "t.csv:2: column 'submit_s'"},
           Case{"1,0,10,0\n", "num_gpus'"},
           Case{"1,0,10,x\n", "num_gpus"},
       }) {
    auto trace =
        ParseGenericCsv(std::string("id,submit_s,duration_s,num_gpus\n") + c.row, "t.csv", {});
    ASSERT_FALSE(trace.ok()) << c.row;
    EXPECT_NE(trace.error().find(c.expected), std::string::npos) << trace.error();
  }
  auto share =
      ParseGenericCsv("id,submit_s,duration_s,num_gpus,gpu_milli\n1,0,10,2,500\n", "t.csv", {});
  ASSERT_FALSE(share.ok());
  EXPECT_NE(share.error().find("below 1000 only with num_gpus 1"), std::string::npos);
}

TEST(JobTrace, OpenbTimeModeSkipsWhatNeverRanAGpuJob) {
  test::TempFile pods("pods.csv",
                      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                      "creation_time,deletion_time,scheduled_time\n"
                      "p0,8000,16384,1,500,,LS,Running,100,700,100\n"
                      "p1,16000,32768,2,1000,T4,BE,Running,50,1050,50\n"
                      "p2,4000,4096,0,0,,LS,Running,10,20,10\n"     // no GPU
                      "p3,4000,4096,1,1000,,LS,Running,30,30,30\n"  // never ran
                      "p4,4000,4096,1,1000,,LS,Running,40,,40\n");  // still running
  auto trace = ReadJobTrace("openb:" + pods.path(), {}, core::GpuCatalog::Builtin());
  ASSERT_TRUE(trace.ok()) << trace.error();
  EXPECT_EQ(trace.value().skipped, 3);
  const auto& jobs = trace.value().jobs;
  ASSERT_EQ(jobs.size(), 2U);
  EXPECT_EQ(jobs[0].submit_s, 0);
  EXPECT_EQ(jobs[0].duration_s, 1000);
  EXPECT_EQ(jobs[0].num_gpus, 2);
  EXPECT_EQ(jobs[0].vc, "BE");
  EXPECT_EQ(jobs[0].cpu_milli_per_gpu, 8000);
  EXPECT_EQ(jobs[1].submit_s, 50);
  EXPECT_EQ(jobs[1].gpu_milli, 500);
}

TEST(JobTrace, UnknownFormatSaysWhichExist) {
  auto trace = ReadJobTrace("helios:x.csv", {}, core::GpuCatalog::Builtin());
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().find("philly, openb or csv"), std::string::npos);
}

}  // namespace
}  // namespace gpufleet::sim

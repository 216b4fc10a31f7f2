#include "sim/philly_trace.h"

#include <gtest/gtest.h>

#include <map>

#include "testing/builders.h"

namespace gpufleet::sim {
namespace {

using test::TempFile;

constexpr const char* kHeader = "timestamp,duration,num_gpus,gpu_time,cluster\n";

TEST(PhillyTimestampTest, ParsesUtcSeconds) {
  EXPECT_EQ(ParseTimestamp("1970-01-01 00:00:00").value(), 0);
  EXPECT_EQ(ParseTimestamp("2017-10-09 07:01:55").value(), 1507532515);  // from Python's timegm
  EXPECT_EQ(ParseTimestamp("2000-02-29 12:00:00").value(), 951825600);
  EXPECT_FALSE(ParseTimestamp("2017-10-09T07:01:55").ok());
  EXPECT_FALSE(ParseTimestamp("2017-13-09 07:01:55").ok());
  EXPECT_FALSE(ParseTimestamp("2017-10-09 07:01").ok());
}

TEST(PhillyTraceTest, SortsBySubmitTimeStablyAndRebasesTimes) {
  TempFile f("philly", std::string(kHeader) +
                           "2017-10-09 07:00:10,60.0,1,60.0,vcA\n"
                           "2017-10-09 07:00:00,30.5,8,244.0,vcB\n"
                           "2017-10-09 07:00:10,5.0,2,10.0,vcC\n");
  auto trace = ReadPhillyTrace(f.path(), {});
  ASSERT_TRUE(trace.ok()) << trace.error();
  const auto& jobs = trace.value().jobs;
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].vc, "vcB");
  EXPECT_EQ(jobs[0].submit_s, 0);
  EXPECT_EQ(jobs[0].duration_s, 31);  // rounded up
  EXPECT_EQ(jobs[0].num_gpus, 8);
  EXPECT_EQ(jobs[0].line, 3);
  EXPECT_EQ(jobs[1].vc, "vcA");  // equal timestamps keep file order
  EXPECT_EQ(jobs[2].vc, "vcC");
  EXPECT_EQ(jobs[2].submit_s, 10);
  EXPECT_EQ(jobs[2].id, 2);
  EXPECT_EQ(trace.value().first_submit_unix_s, ParseTimestamp("2017-10-09 07:00:00").value());
}

TEST(PhillyTraceTest, LimitAndWindow) {
  std::string text = kHeader;
  for (int i = 0; i < 10; ++i) {
    text += "2017-10-09 07:00:0" + std::to_string(i) + ",10,1,10,vc\n";
  }
  TempFile f("philly", text);
  PhillyReadOptions limit;
  limit.limit = 4;
  EXPECT_EQ(ReadPhillyTrace(f.path(), limit).value().jobs.size(), 4u);
  PhillyReadOptions window;
  window.window_start_s = 3;
  window.window_end_s = 7;
  auto w = ReadPhillyTrace(f.path(), window);
  ASSERT_TRUE(w.ok()) << w.error();
  ASSERT_EQ(w.value().jobs.size(), 4u);           // offsets 3, 4, 5, 6
  EXPECT_EQ(w.value().jobs.front().submit_s, 0);  // rebased to the first kept job
  EXPECT_EQ(w.value().jobs.back().submit_s, 3);
  window.window_start_s = 100;
  EXPECT_FALSE(ReadPhillyTrace(f.path(), window).ok());
}

TEST(PhillyTraceTest, DuplicatesAreKeptAndCounted) {
  TempFile f("philly", std::string(kHeader) +
                           "2017-10-09 07:00:00,10,1,10,vc\n"
                           "2017-10-09 07:00:00,10,1,10,vc\n");
  auto trace = ReadPhillyTrace(f.path(), {});
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(trace.value().jobs.size(), 2u);
  EXPECT_EQ(trace.value().duplicate_rows, 1);
}

// Each bad row is rejected with an error naming the file, the line and the column.
void ExpectError(const std::string& row, const std::string& column, const std::string& what) {
  TempFile f("philly", std::string(kHeader) + "2017-10-09 07:00:00,10,1,10,vc\n" + row + "\n");
  auto trace = ReadPhillyTrace(f.path(), {});
  ASSERT_FALSE(trace.ok()) << row;
  EXPECT_NE(trace.error().find(f.path() + ":3"), std::string::npos) << trace.error();
  EXPECT_NE(trace.error().find("column '" + column + "'"), std::string::npos) << trace.error();
  EXPECT_NE(trace.error().find(what), std::string::npos) << trace.error();
}

TEST(PhillyTraceTest, BadRows) {
  ExpectError("2017-10-09 07:00:00,0,1,0,vc", "duration", "positive time");
  ExpectError("2017-10-09 07:00:00,-5,1,-5,vc", "duration", "positive time");
  ExpectError("2017-10-09 07:00:00,abc,1,1,vc", "duration", "expected a number");
  // Security finding 10: a duration of 1e300 was cast to an integer unchecked (a negative
  // utilization, and exit 0).
  ExpectError("2017-10-09 07:00:00,1e300,1,1,vc", "duration", "ten years");
  ExpectError("2017-10-09 07:00:00,3.6e83,1,1,vc", "duration", "ten years");  // fuzz/philly_trace
  ExpectError("2017-10-09 07:00:00,10,-1,1,vc", "num_gpus", "positive GPU count");
  ExpectError("2017-10-09 07:00:00,10,two,1,vc", "num_gpus", "expected an integer");
  ExpectError("yesterday,10,1,1,vc", "timestamp", "YYYY-MM-DD");
  ExpectError("2017-10-09 07:00:00,10,1,10,", "cluster", "empty virtual cluster");
}

TEST(PhillyTraceTest, ParsesTextAsTheFileReaderDoes) {
  const std::string text = std::string(kHeader) +
                           "2017-10-09 07:00:10,60.0,1,60.0,vcA\n"
                           "2017-10-09 07:00:00,30.5,8,244.0,vcB\n";
  TempFile f("philly", text);
  auto from_file = ReadPhillyTrace(f.path(), {});
  auto from_text = ParsePhillyTrace(text, "trace.csv", {});
  ASSERT_TRUE(from_file.ok() && from_text.ok());
  ASSERT_EQ(from_text.value().jobs.size(), 2u);
  EXPECT_EQ(from_text.value().jobs[0].vc, "vcB");
  EXPECT_EQ(from_text.value().jobs[1].submit_s, 10);
  EXPECT_EQ(from_text.value().first_submit_unix_s, from_file.value().first_submit_unix_s);
  auto bad = ParsePhillyTrace(std::string(kHeader) + "2017-10-09 07:00:00,1,1,1,\n", "t.csv", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().rfind("t.csv:2:", 0), 0u) << bad.error();
}

TEST(PhillyTraceTest, MissingColumnAndMissingFile) {
  TempFile f("philly", "timestamp,duration,cluster\n2017-10-09 07:00:00,10,vc\n");
  auto trace = ReadPhillyTrace(f.path(), {});
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().find("missing column 'num_gpus'"), std::string::npos) << trace.error();
  EXPECT_FALSE(ReadPhillyTrace("/nonexistent/philly.csv", {}).ok());
}

TEST(PhillyTraceTest, TheRealTrace) {
  auto dir = test::SharedTracesDir();
  if (!dir) GTEST_SKIP() << test::MissingTracesMessage();
  auto trace = ReadPhillyTrace((*dir / "philly" / "philly_pollux_osdi21.csv").string(), {});
  ASSERT_TRUE(trace.ok()) << trace.error();
  const auto& jobs = trace.value().jobs;
  EXPECT_EQ(jobs.size(), 82247u);
  std::map<int, int> by_gpus;
  for (size_t i = 0; i < jobs.size(); ++i) {
    ++by_gpus[jobs[i].num_gpus];
    if (i > 0) {
      ASSERT_LE(jobs[i - 1].submit_s, jobs[i].submit_s);
    }
  }
  // The GPU-count distribution stated in ../shared/traces/README.md.
  EXPECT_EQ(by_gpus[1], 76627);
  EXPECT_EQ(by_gpus[8], 1643);
  EXPECT_EQ(by_gpus[128], 3);
  EXPECT_EQ(jobs.front().submit_s, 0);
}

}  // namespace
}  // namespace gpufleet::sim

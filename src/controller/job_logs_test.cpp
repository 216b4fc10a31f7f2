#include "controller/job_logs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gpufleet::controller {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(JobLogs, ChunksAppendPerRankAndAnEarlierRunIsKeptAside) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("gpufleet-job-logs-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const JobLogs logs(dir.string());
  EXPECT_EQ(logs.Path(7, 0), (dir / "logs" / "7.log").string());
  EXPECT_EQ(logs.Path(7, 2), (dir / "logs" / "7.rank2.log").string());
  EXPECT_EQ(logs.Size(7, 0), 0) << "no file yet";
  ASSERT_TRUE(logs.Append(7, 0, "hello "));
  ASSERT_TRUE(logs.Append(7, 0, std::string("w\0rld\n", 6)));
  ASSERT_TRUE(logs.Append(7, 1, "rank one\n"));
  EXPECT_EQ(logs.Size(7, 0), 12);
  EXPECT_EQ(Read(logs.Path(7, 0)), std::string("hello w\0rld\n", 12));
  logs.KeepEarlierAttempt(7, 2, /*epoch=*/1);  // the first run: nothing before it
  EXPECT_EQ(logs.Size(7, 0), 12);
  logs.KeepEarlierAttempt(7, 2, /*epoch=*/2);
  EXPECT_EQ(logs.Size(7, 0), 0);
  EXPECT_EQ(logs.Size(7, 1), 0);
  EXPECT_EQ(Read(logs.Path(7, 0) + ".attempt1"), std::string("hello w\0rld\n", 12));
  EXPECT_EQ(Read(logs.Path(7, 1) + ".attempt1"), "rank one\n");
  // One job's files, another's whose id starts the same left out.
  ASSERT_TRUE(logs.Append(7, 0, "again\n"));
  ASSERT_TRUE(logs.Append(70, 0, "job seventy\n"));
  const JobLogs::Held seven = logs.Of(7, /*ranks=*/2, /*epoch=*/2);
  EXPECT_EQ(seven.files, (std::vector<std::string>{logs.Path(7, 0), logs.Path(7, 0) + ".attempt1",
                                                   logs.Path(7, 1) + ".attempt1"}));
  EXPECT_EQ(seven.bytes, 6 + 12 + 9);
  ASSERT_TRUE(logs.Erase(seven));
  EXPECT_TRUE(logs.Of(7, 2, 2).files.empty());
  EXPECT_EQ(logs.Of(70, 1, 1).files.size(), 1U);
  std::filesystem::remove_all(dir);
  const JobLogs unwritable("/proc/gpufleet-cannot-be-here");
  EXPECT_FALSE(unwritable.Append(1, 0, "x"));
}

}  // namespace
}  // namespace gpufleet::controller

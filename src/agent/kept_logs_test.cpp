#include "agent/kept_logs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "agent/runner.h"

namespace gpufleet::agent {
namespace {

KeptLog Log(const std::string& path, int64_t job, int64_t bytes, int64_t changed) {
  return KeptLog{path, job, bytes, changed};
}

TEST(KeptLogsToRemove, TheLeastRecentlyWrittenGoUntilTheRestFitsAndHeldJobsAreLeftAlone) {
  const std::vector<KeptLog> logs = {Log("a", 1, 400, 30), Log("b", 2, 400, 10),
                                     Log("c", 3, 400, 20), Log("d", 4, 5000, 5)};
  // Job 4 is still held (its log is live): neither counted nor removed.
  EXPECT_EQ(KeptLogsToRemove(logs, {4}, 800), std::vector<std::string>{"b"});
  EXPECT_EQ(KeptLogsToRemove(logs, {4}, 1200), std::vector<std::string>{});
  EXPECT_EQ(KeptLogsToRemove(logs, {4}, 0), (std::vector<std::string>{"b", "c", "a"}));
  EXPECT_EQ(KeptLogsToRemove(logs, {}, 1200), std::vector<std::string>{"d"});
  EXPECT_EQ(KeptLogsToRemove({}, {}, 0), std::vector<std::string>{});
}

TEST(TrimKeptLogs, RemovesTheOldestLogsWithTheirSideFilesAndNothingElse) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gpufleet-kept-logs-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto write = [&dir](const std::string& name, std::size_t bytes, int age_s) {
    std::ofstream(dir / name) << std::string(bytes, 'x');
    std::filesystem::last_write_time(
        dir / name, std::filesystem::file_time_type::clock::now() - std::chrono::seconds(age_s));
  };
  write("7-0.log", 1000, 300);  // oldest: goes, with its side files
  write("7-0.log.exit", 4, 300);
  write("8-1.log", 1000, 200);
  write("9-0.log", 1000, 100);    // held: stays, not counted
  write("notes.txt", 5000, 900);  // not a job's log: stays
  write("x-1.log", 5000, 900);
  const std::string exit_file = ExitFilePath((dir / "7-0.log").string());
  std::ofstream(exit_file) << "0 0 0";
  EXPECT_EQ(TrimKeptLogs(dir.string(), {9}, 1500), 1);
  EXPECT_FALSE(std::filesystem::exists(dir / "7-0.log"));
  EXPECT_FALSE(std::filesystem::exists(exit_file));
  EXPECT_TRUE(std::filesystem::exists(dir / "8-1.log"));
  EXPECT_TRUE(std::filesystem::exists(dir / "9-0.log"));
  EXPECT_TRUE(std::filesystem::exists(dir / "notes.txt"));
  EXPECT_TRUE(std::filesystem::exists(dir / "x-1.log"));
  EXPECT_EQ(TrimKeptLogs(dir.string(), {9}, 1500), 0);
  EXPECT_EQ(TrimKeptLogs((dir / "missing").string(), {}, 0), 0);
  std::filesystem::remove_all(dir);
}

// Found by a review: a job that writes its own log (an admin's --log-limit 0) owns it, and could
// set its mtime far ahead (futimens) so that every other kept log went first.
TEST(TrimKeptLogs, ALogsMtimeSetAheadDoesNotKeepItLongerThanNewerLogs) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("gpufleet-kept-logs-ahead-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "5-1.log") << std::string(1000, 'x');
  std::filesystem::last_write_time(dir / "5-1.log", std::filesystem::file_time_type::clock::now() +
                                                        std::chrono::hours(24 * 365));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a later change, whatever the clock
  std::ofstream(dir / "6-1.log") << std::string(1000, 'y');
  EXPECT_EQ(TrimKeptLogs(dir.string(), {}, 1500), 1);
  EXPECT_FALSE(std::filesystem::exists(dir / "5-1.log")) << "the one changed first goes";
  EXPECT_TRUE(std::filesystem::exists(dir / "6-1.log"));
  std::filesystem::remove_all(dir);
}

// A job that writes its own log (an admin's --log-limit 0) can make it sparse and huge: its holes
// must not count, or it would evict every other kept log. Before, the 1 TiB of holes counted.
TEST(TrimKeptLogs, ASparseLogCountsWhatItHoldsOnDiskNotItsHoles) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("gpufleet-sparse-logs-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "3-0.log") << std::string(1000, 'x');
  std::filesystem::last_write_time(
      dir / "3-0.log", std::filesystem::file_time_type::clock::now() - std::chrono::seconds(600));
  std::ofstream(dir / "4-0.log") << "a";
  std::error_code ec;
  std::filesystem::resize_file(dir / "4-0.log", uint64_t{1} << 40, ec);
  if (ec) GTEST_SKIP() << "this file system cannot hold a 1 TiB sparse file: " << ec.message();
  EXPECT_EQ(TrimKeptLogs(dir.string(), {}, 64 << 10), 0);
  EXPECT_TRUE(std::filesystem::exists(dir / "3-0.log"));
  EXPECT_TRUE(std::filesystem::exists(dir / "4-0.log"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpufleet::agent

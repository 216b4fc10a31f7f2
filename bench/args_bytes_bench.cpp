// What one user's count of argv and env bytes costs the SQLite store (Store::JobArgsBytesOf, the
// per-user byte budget's recount, run under the store's lock): JOBS jobs of one user with ARGV
// bytes of argv each (a cap is reached by large jobs), then the count, 9 times, median. Beside
// it, in the same run on the same database, the query it replaced: summing the sizes of the
// stored texts themselves, which reads each row's argv and env (their overflow pages too).
// Usage: args_bytes_bench [--jobs 20000] [--argv-bytes 16384]
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "store/store.h"

namespace {

using namespace gpufleet;

// Median wall time of 9 runs of `run`, in milliseconds.
double MedianMs(const std::function<void()>& run) {
  std::vector<double> ms;
  for (int i = 0; i < 9; ++i) {
    const auto t = std::chrono::steady_clock::now();
    run();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 20000;
  int argv_bytes = 16384;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--jobs"))
      jobs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--argv-bytes"))
      argv_bytes = std::atoi(argv[i + 1]);
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gpufleet-args-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto opened = store::OpenSqliteStore(dir.string());
  if (!opened) {
    std::fprintf(stderr, "store: %s\n", opened.error().c_str());
    return 1;
  }
  auto store = std::move(opened).value();
  for (int k = 0; k < jobs; ++k) {
    store::JobRecord job;
    job.user = k % 10 == 0 ? "other" : "heavy";
    job.argv = {"train", std::string(static_cast<std::size_t>(argv_bytes), 'a' + k % 26)};
    job.gpus = 1;
    job.submit_ms = 1;
    if (auto r = store->AddJob(job); !r) {
      std::fprintf(stderr, "submit: %s\n", r.error().c_str());
      return 1;
    }
  }
  int64_t counted = 0;
  const double index_ms = MedianMs([&] { counted = store->JobArgsBytesOf("heavy").value(); });
  store.reset();
  sqlite3* db = nullptr;
  if (sqlite3_open((dir / "gpufleet.db").string().c_str(), &db) != SQLITE_OK) return 1;
  int64_t summed = 0;
  const double texts_ms = MedianMs([&] {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db,
                       "SELECT COALESCE(SUM(length(CAST(argv AS BLOB))+length(CAST(env AS "
                       "BLOB))),0) FROM jobs WHERE user='heavy'",
                       -1, &s, nullptr);
    if (sqlite3_step(s) == SQLITE_ROW) summed = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
  });
  sqlite3_close(db);
  std::filesystem::remove_all(dir);
  std::printf("jobs of the user: %d of %d argv bytes each (%.0f MiB in all)\n", jobs - jobs / 10,
              argv_bytes, static_cast<double>(counted) / (1 << 20));
  std::printf("count from the index (args_bytes): median %.2f ms\n", index_ms);
  std::printf("count from the texts (before):     median %.2f ms (%.0fx)\n", texts_ms,
              texts_ms / std::max(index_ms, 1e-6));
  if (counted != summed) {
    std::fprintf(stderr, "the two counts differ: %lld against %lld\n",
                 static_cast<long long>(counted), static_cast<long long>(summed));
    return 1;
  }
  return 0;
}

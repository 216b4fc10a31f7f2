#include "agent/kept_logs.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <tuple>

#include "agent/runner.h"

namespace gpufleet::agent {
namespace {

// The job id of a log named `<job>-<epoch>.log`; nullopt for any other name.
std::optional<int64_t> JobOfLogName(const std::string& name) {
  constexpr std::string_view kSuffix = ".log";
  if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) return std::nullopt;
  const std::string_view stem(name.data(), name.size() - kSuffix.size());
  const std::size_t dash = stem.find('-');
  if (dash == 0 || dash == std::string_view::npos || dash + 1 == stem.size()) return std::nullopt;
  int64_t job = 0;
  int64_t epoch = 0;
  const auto [job_end, job_ec] = std::from_chars(stem.data(), stem.data() + dash, job);
  const auto [epoch_end, epoch_ec] =
      std::from_chars(stem.data() + dash + 1, stem.data() + stem.size(), epoch);
  if (job_ec != std::errc() || job_end != stem.data() + dash || epoch_ec != std::errc() ||
      epoch_end != stem.data() + stem.size() || job <= 0 || epoch < 0) {
    return std::nullopt;
  }
  return job;
}

}  // namespace

std::vector<std::string> KeptLogsToRemove(std::vector<KeptLog> logs, const std::set<int64_t>& held,
                                          int64_t budget_bytes) {
  std::erase_if(logs, [&held](const KeptLog& l) { return held.contains(l.job_id); });
  int64_t total = 0;
  for (const KeptLog& l : logs) total += std::max<int64_t>(0, l.bytes);
  std::sort(logs.begin(), logs.end(), [](const KeptLog& a, const KeptLog& b) {
    return std::tie(a.changed_ns, a.path) < std::tie(b.changed_ns, b.path);
  });
  std::vector<std::string> remove;
  for (const KeptLog& l : logs) {
    if (total <= budget_bytes) break;
    remove.push_back(l.path);
    total -= std::max<int64_t>(0, l.bytes);
  }
  return remove;
}

int TrimKeptLogs(const std::string& logs_dir, const std::set<int64_t>& held, int64_t budget_bytes) {
  std::vector<KeptLog> logs;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(logs_dir, ec)) {
    std::error_code entry_ec;
    if (!entry.is_regular_file(entry_ec) || entry.is_symlink(entry_ec)) continue;
    const auto job = JobOfLogName(entry.path().filename().string());
    if (!job) continue;
    KeptLog l;
    l.path = entry.path().string();
    l.job_id = *job;
    // What it holds on disk, not its apparent size: a job writing its own log (no --log-limit)
    // may ftruncate it to terabytes of holes, which would otherwise evict everyone's kept logs.
    struct stat st {};
    if (::lstat(l.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    l.bytes = std::min<int64_t>(st.st_size, static_cast<int64_t>(st.st_blocks) * 512);
    l.changed_ns = int64_t{st.st_ctim.tv_sec} * 1'000'000'000 + st.st_ctim.tv_nsec;
    logs.push_back(std::move(l));
  }
  int removed = 0;
  for (const std::string& path : KeptLogsToRemove(std::move(logs), held, budget_bytes)) {
    for (const std::string& file :
         {path, ExitFilePath(path), FencedFilePath(path), ContainerIdFilePath(path)}) {
      std::filesystem::remove(file, ec);
    }
    ++removed;
  }
  return removed;
}

}  // namespace gpufleet::agent

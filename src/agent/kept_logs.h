#pragma once
// The logs a node keeps after their jobs are forgotten (the controller stopped waiting for the
// rest of them): kept for an admin, but within a budget, or a user's jobs that print fast and
// exit would fill the node's disk, one log at a time. `KeptLogsToRemove` decides (pure);
// `TrimKeptLogs` scans the node's log folder and removes what it chose.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace gpufleet::agent {

struct KeptLog {
  std::string path;    // `<data_dir>/logs/<job>-<epoch>.log`
  int64_t job_id = 0;  // from the file's name
  int64_t bytes = 0;   // on disk (a sparse file's holes are not counted)
  // Last written or changed (its ctime): a job that writes its own log (--log-limit 0) owns it
  // and may set its mtime to any time, but not its ctime.
  int64_t changed_ns = 0;
};

// The logs to remove so that those of jobs not in `held` total at most `budget_bytes`: the
// least recently changed first (ties: by path). Logs of held jobs are never chosen, nor counted.
std::vector<std::string> KeptLogsToRemove(std::vector<KeptLog> logs, const std::set<int64_t>& held,
                                          int64_t budget_bytes);

// Removes, from `logs_dir`, the logs KeptLogsToRemove chooses and their side files (exit,
// fenced and container-id records). Files whose names are not `<job>-<epoch>.log` are left
// alone. How many logs it removed.
int TrimKeptLogs(const std::string& logs_dir, const std::set<int64_t>& held, int64_t budget_bytes);

}  // namespace gpufleet::agent

#pragma once
// Processes that outlive the one that started them: the local provider's agents, which must keep
// running when the controller is killed, as a cloud instance would. Each is the leader of a
// session of its own, so that it and everything it starts (the agent's jobs keep its session)
// are found and stopped together, by a later process if need be.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpufleet::cloud {

// A process as /proc knows it: a pid alone could be reused; the pid and its start time cannot.
struct ProcessId {
  int pid = 0;
  uint64_t start_ticks = 0;  // /proc/PID/stat field 22; 0: unknown (any process with `pid`)
};

struct DetachedLaunch {
  std::vector<std::string> argv;  // argv[0]: the program's path
  std::vector<std::string> env;   // its whole environment ("KEY=value")
  std::string cwd;                // it runs there
  std::string log_path;           // stdout and stderr, appended (created 0600)
  // Before anything else the process puts its pid here, whole (written aside, then linked). When
  // the file exists already (another launch claimed it), or cannot be written, the process ends
  // without running the program.
  std::string pid_path;
  std::string started_path;  // created just before the program is executed
  int64_t delay_s = 0;       // waited before that (the instance's boot time)
};

// Starts `launch` detached (a double fork: the process is no child of this one, and no zombie of
// it when it ends) in a new session; returns once its pid file is written, without waiting for
// `delay_s`. The program's failure to start shows in the log, and as its end. Nothing (nullopt)
// when `pid_path` existed already: two launches racing for one instance start it once.
core::Result<std::optional<ProcessId>> LaunchDetached(const DetachedLaunch& launch);

// Whether `id` is alive (a zombie is not).
bool IsAlive(const ProcessId& id);

// Stops the session `leader` leads, and every process in it: SIGTERM, then SIGKILL after
// `grace_ms`. A session whose leader ended is still stopped, unless its pid was reused by a new
// process (then nothing of the old session is left). An error when something survived SIGKILL.
core::Result<bool> StopSession(const ProcessId& leader, int64_t grace_ms);

// Reads "PID [START_TICKS]" as a pid file holds it.
std::optional<ProcessId> ParsePidFile(const std::string& text);
std::string FormatPidFile(const ProcessId& id);
// The start time of process `pid`, or 0 when it is gone.
uint64_t StartTicks(int pid);

}  // namespace gpufleet::cloud

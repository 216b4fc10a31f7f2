#pragma once
// Job settlement: what a job's next state is, given how each of its ranks stands. A pure function
// of its inputs (no clock, store or lock), so every case of a multi-node job's end is unit-tested
// here (settlement_test.cpp); the Controller gathers the inputs and carries out the answer.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/store.h"

namespace gpufleet::controller {

// One rank (one node's part) of a job, as its agent last reported it.
struct RankStanding {
  std::string node;
  bool started = false;  // known to have run
  bool ended = false;
  bool lost = false;     // ended without a known exit
  bool stopped = false;  // ended after the controller asked it to stop
  int exit_code = 0;
  std::string reason;           // the agent's words on how it ended, if any
  int64_t oom_kills = 0;        // processes of it the kernel's OOM killer ended
  bool log_in_flight = false;   // ended, with log bytes not yet shipped (and not given up on)
};

// What the controller knows of the job beyond its ranks.
struct JobStanding {
  bool running = false;     // recorded RUNNING (else SCHEDULED)
  bool cancel = false;      // a user cancelled it
  bool stopping = false;    // its ranks were asked to stop
  bool preempting = false;  // stopped for a job the queue policy ranks higher
  bool timed_out = false;   // stopped at its time limit
  bool restartable = false;
  std::string health_stop;  // stopped because a GPU of its became unhealthy: why ("" : not)
  std::string idle_stop;    // stopped by the idle reclaim: why ("idle for 30 min"; "" : not)
  int64_t time_limit_s = 0;
  int64_t memory_mib = 0;   // its memory limit (0: none), for the OOM reason
  std::string queue_policy;
  // Set with `preempting` when the stop is an elastic job's resize: the reason it ends with.
  std::string resizing;
};

struct Settlement {
  bool now_running = false;    // every rank has started: record it RUNNING
  bool stop_the_rest = false;  // a rank failed while others run: stop them
  // Once every rank has ended and its log is in: the state it ends in, its exit code (none for
  // LOST) and why. PREEMPTED jobs wait again; LOST restartable ones too (the controller requeues).
  std::optional<store::JobState> end;
  std::optional<int> exit_code;
  std::string reason;
};

Settlement Settle(const std::vector<RankStanding>& ranks, const JobStanding& job);

// Why a job the kernel's OOM killer hit failed, with the limit it hit.
std::string OomReason(int64_t kills, int64_t memory_mib, int exit_code);

}  // namespace gpufleet::controller

#pragma once
// Runs a program to completion the way the exec provider needs it: no shell (argv as given),
// stdin from /dev/null, stdout and stderr captured (each capped), in a process group of its own
// that is killed as a whole when the deadline passes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpufleet::cloud {

struct ProgramRun {
  std::vector<std::string> argv;  // argv[0] is the program's path (not searched on PATH)
  std::vector<std::string> env;   // "KEY=value" entries: the whole environment of the program
  int64_t timeout_s = 120;
  int64_t kill_grace_ms = 5000;            // from SIGTERM to SIGKILL once the deadline passed
  std::size_t max_output_bytes = 1 << 20;  // of stdout and of stderr; the rest is read, dropped
};

struct ProgramOutcome {
  bool timed_out = false;  // the deadline passed: the group got SIGTERM, then SIGKILL
  int exit_code = -1;      // when it exited; -1 otherwise
  int signal = 0;          // the signal that ended it, or 0
  std::string out;
  std::string err;
  bool Succeeded() const { return !timed_out && signal == 0 && exit_code == 0; }
};

// Starts `run.argv` and waits for it. An error only when it could not be started (the program is
// missing or not executable, no pipes or processes left); a program that fails or times out is
// an outcome. Every process left in its group when it ends is killed, so that a timed-out
// script's children do not outlive it. Safe to call from several threads at once.
core::Result<ProgramOutcome> RunProgram(const ProgramRun& run);

// The environment of this process, without the entries whose name starts with `drop_prefix`
// (the controller's own GPUFLEET_* settings, its admin token among them, are not a script's),
// nor libpq's PG* variables (the controller's database password among them).
std::vector<std::string> InheritedEnvironment(const std::string& drop_prefix);

// The first lines of a program's stderr for an error message: at most `max_lines` non-empty
// lines joined by " | ", at most `max_bytes` bytes, control characters removed.
std::string FirstLines(const std::string& text, int max_lines = 3, std::size_t max_bytes = 400);

}  // namespace gpufleet::cloud

#pragma once
// The client commands' command line (`submit`, `jobs`, `show`, `cancel`, `logs`, `nodes`), shared
// by `gpufleet` (which runs them itself) and `gpufleet-full` (which runs every command).
#include <cstdint>

#include "cli/advise_commands.h"
#include "cli/client_commands.h"
#include "cli/queue_commands.h"

namespace CLI {
class App;
}

namespace gpufleet::cli {

// Adds the client commands to `app` (which holds the program's other commands), parses the
// command line and runs the command it names; the program's exit status.
int AddClientCommandsAndRun(CLI::App& app, int argc, char** argv);

// Holds the parsed options; it must outlive the parse of `app`.
class ClientCli {
 public:
  // Adds the client subcommands to `app`; each one exits the process with its status.
  void Register(CLI::App& app);

 private:
  SubmitOptions submit_;
  JobsOptions jobs_;
  ClientOptions job_client_;
  AdminOptions admin_;
  AdviseOptions advise_;
  ReportOptions report_;
  ClientOptions scale_client_;
  QueueOptions queue_;
  ShowOptions show_;
  int64_t job_id_ = 0;
  bool follow_ = false;
  bool raw_logs_ = false;  // logs --raw
};

}  // namespace gpufleet::cli

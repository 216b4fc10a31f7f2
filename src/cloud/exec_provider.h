#pragma once
// The `exec` provider: the administrator's script does the cloud's work, as Slurm's
// ResumeProgram and SuspendProgram do. It is run without a shell, with stdin from /dev/null:
//
//   SCRIPT create --group G --name N [--spot]   # prints nothing, or {"name": "N"}; exit 0
//   SCRIPT delete --name N                      # exit 0 (also when N does not exist)
//   SCRIPT list                                 # prints {"instances": [...]} (instance_list.h)
//
// `create` finds what the new node needs to join in its environment, never on its command line:
// GPUFLEET_CONTROLLER_URL, GPUFLEET_JOIN_TOKEN, GPUFLEET_CA_FILE ("" when none), GPUFLEET_GROUP,
// GPUFLEET_GPU_MODEL and GPUFLEET_GPUS. Every call gets this process's environment otherwise,
// less its own GPUFLEET_* variables. A call that runs past `timeout_s` is killed with its whole
// process group (SIGTERM, SIGKILL 5 s later); a non-zero exit is an error that quotes the first
// lines of the script's stderr. scripts/cloud/ has examples for AWS, GCP and Huawei Cloud.
#include <cstdint>
#include <string>
#include <vector>

#include "cloud/provider.h"
#include "cloud/run_program.h"

namespace gpufleet::cloud {

class ExecProvider final : public Provider {
 public:
  ExecProvider(std::string script, int64_t timeout_s);

  std::string_view Kind() const override { return "exec"; }
  core::Result<bool> Create(const scale::NodeGroup& group, const std::string& name, bool spot,
                            const JoinInfo& join) override;
  core::Result<bool> Delete(const std::string& name) override;
  core::Result<std::vector<Instance>> List() override;

  // Tests shorten the SIGTERM-to-SIGKILL grace (default 5 s).
  void set_kill_grace_ms(int64_t ms) { kill_grace_ms_ = ms; }

 private:
  // Runs the script with `args`; the script's stdout when it exited 0.
  core::Result<std::string> Call(const std::vector<std::string>& args,
                                 const std::vector<std::string>& extra_env);

  std::string script_;
  int64_t timeout_s_;
  int64_t kill_grace_ms_ = 5000;
};

}  // namespace gpufleet::cloud

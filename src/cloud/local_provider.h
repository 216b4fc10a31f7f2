#pragma once
// The `local` provider, for tests and demos: an "instance" is a `gpufleet agent` process on this
// machine with simulated GPUs, started `boot_s` after `Create` as a cloud instance would boot.
//
// State lives on disk, one folder per instance, so that a controller started after the last one
// was killed (kill -9) finds the instances it created:
//   <work_dir>/<name>/instance.json   name, group, spot, gpus, created_at_s, boot_s
//   <work_dir>/<name>/pid             "PID START_TICKS" of the agent (its session's leader)
//   <work_dir>/<name>/started         created when the boot delay ended and the agent was started
//   <work_dir>/<name>/agent.log       the agent's stdout and stderr
//   <work_dir>/<name>/agent/          the agent's data directory
//   <work_dir>/<name>/interrupt       created by a test or a person: a spot interruption notice,
//                                     reported as interruption_at = its mtime + 120 s
// The agent runs detached, in a session of its own: it survives the controller, and `Delete`
// stops it with every job it started (SIGTERM, then SIGKILL).
//
// `List` reports "pending" until the agent was started, "running" while it lives, and "stopping"
// once it ended on its own (an unreachable controller, a spent join token: see its agent.log);
// such an instance stays listed until it is deleted, as a broken cloud instance would. A folder
// whose Create (or Delete) was cut short is listed "pending" too, with no group: a Create of its
// name finishes it, a Delete removes it.
#include <cstdint>
#include <string>
#include <vector>

#include "cloud/provider.h"

namespace gpufleet::cloud {

class LocalProvider final : public Provider {
 public:
  // `options.work_dir` must not be empty; `gpufleet_binary` "" is this process's executable.
  explicit LocalProvider(LocalProviderOptions options);

  std::string_view Kind() const override { return "local"; }
  core::Result<bool> Create(const scale::NodeGroup& group, const std::string& name, bool spot,
                            const JoinInfo& join) override;
  core::Result<bool> Delete(const std::string& name) override;
  core::Result<std::vector<Instance>> List() override;

  // The agent's command line for instance `name` (argv[0] is the binary): `group.gpus` simulated
  // GPUs of the group's model. The agent has no flag for CPU cores or memory, so the node reports
  // this machine's. The join token goes in the environment (GPUFLEET_JOIN_TOKEN), not here.
  std::vector<std::string> AgentArgv(const scale::NodeGroup& group, const std::string& name,
                                     const JoinInfo& join) const;

  // Tests shorten the SIGTERM-to-SIGKILL grace of `Delete` (default 5 s).
  void set_stop_grace_ms(int64_t ms) { stop_grace_ms_ = ms; }

 private:
  std::string Dir(const std::string& name) const;
  core::Result<Instance> ReadInstance(const std::string& name) const;

  LocalProviderOptions options_;
  int64_t stop_grace_ms_ = 5000;
};

}  // namespace gpufleet::cloud

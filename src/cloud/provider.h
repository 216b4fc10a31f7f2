#pragma once
// Cloud providers: the I/O side of the autoscaler (scale/ plans, a provider carries it out). A
// provider creates, deletes and lists instances; every call blocks until the provider answered
// or the call's timeout passed, so the controller calls it off its lock, from its own thread.
//
// Names are the controller's: it chooses an instance's name before asking for it (and records
// the intent first), so that a controller killed while an instance was being created finds it
// again by name in `List` and neither creates a second one nor leaves it orphaned.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "scale/autoscale_config.h"

namespace gpufleet::cloud {

struct Instance {
  std::string name;
  std::string group;
  bool spot = false;
  std::string state;  // "pending", "running" or "stopping"
  // A spot instance the provider will take back soon (the 2-minute notice): the controller
  // drains it. 0: no notice; else when the provider will take it (Unix seconds).
  int64_t interruption_at_s = 0;
};

// What a new instance needs to join the controller: given to `Create` and from there to the
// instance (the exec provider passes them in the script's environment, never on its command
// line: GPUFLEET_CONTROLLER_URL, GPUFLEET_JOIN_TOKEN, GPUFLEET_CA_FILE).
struct JoinInfo {
  std::string controller_url;
  std::string join_token;  // single use: `token create --join`
  std::string ca_file;     // "" : none (plain http on loopback)
};

class Provider {
 public:
  virtual ~Provider() = default;
  virtual std::string_view Kind() const = 0;
  // Asks for instance `name` of `group` (spot or on-demand). Returns once the provider accepted
  // it (not once it booted). Creating a name that exists already is not an error: the call is
  // idempotent, so a retry after a timeout does not buy a second instance.
  virtual core::Result<bool> Create(const scale::NodeGroup& group, const std::string& name,
                                    bool spot, const JoinInfo& join) = 0;
  // Deletes instance `name`; deleting one that does not exist is not an error.
  virtual core::Result<bool> Delete(const std::string& name) = 0;
  // Every instance the provider holds for this fleet.
  virtual core::Result<std::vector<Instance>> List() = 0;
};

// Options only the `local` provider needs: how to start `gpufleet agent` on this machine.
struct LocalProviderOptions {
  std::string gpufleet_binary;  // the agent's executable ("" : this process's /proc/self/exe)
  std::string work_dir;         // each instance gets <work_dir>/<name>/ (data dir, log)
  // More agent flags, e.g. --allow-root-jobs when the controller itself was given it.
  std::vector<std::string> extra_agent_args;
};

// The provider `config` names. Errors name the [provider] key at fault.
core::Result<std::unique_ptr<Provider>> MakeProvider(const scale::AutoscaleConfig& config,
                                                     const LocalProviderOptions& local);

}  // namespace gpufleet::cloud

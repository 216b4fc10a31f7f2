#include "cloud/provider.h"

#include "cloud/exec_provider.h"
#include "cloud/local_provider.h"

namespace gpufleet::cloud {

core::Result<std::unique_ptr<Provider>> MakeProvider(const scale::AutoscaleConfig& config,
                                                     const LocalProviderOptions& local) {
  const scale::ProviderConfig& p = config.provider;
  const auto invalid = [](const std::string& key, const std::string& why) {
    return core::Error{"[provider] " + key + ": " + why, core::ErrorCode::kInvalid, key};
  };
  if (p.kind == "exec") {
    if (p.script.empty()) return invalid("script", "the exec provider needs a script to run");
    if (p.timeout_s < 1 || p.timeout_s > 3600) return invalid("timeout_s", "must be 1 to 3600");
    if (p.netns) return invalid("netns", "only the local provider has network namespaces");
    return std::unique_ptr<Provider>(std::make_unique<ExecProvider>(p.script, p.timeout_s));
  }
  if (p.kind == "local") {
    if (p.netns) {
      return invalid("netns",
                     "not implemented: the local provider runs every agent in this machine's "
                     "network namespace; leave netns out or false");
    }
    if (local.work_dir.empty()) {
      return core::Error{"the local provider needs a work directory", core::ErrorCode::kInternal};
    }
    return std::unique_ptr<Provider>(std::make_unique<LocalProvider>(local));
  }
  return invalid("kind", "'" + p.kind + "' is not a provider: use \"exec\" or \"local\"");
}

}  // namespace gpufleet::cloud

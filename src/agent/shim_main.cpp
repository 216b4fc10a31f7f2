// gpufleet-shim: the process each job runs under (agent/job_shim.h). Started by the Runner only.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "agent/job_shim.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto spec = gpufleet::agent::ParseShimCommandLine(args);
  // The job's environment, read before anything else and closed, so the job never inherits it.
  auto env = gpufleet::agent::ReadShimEnvironment(gpufleet::agent::kShimEnvFd);
  close(gpufleet::agent::kShimEnvFd);
  if (!spec || !env) {
    std::fprintf(stderr, "gpufleet-shim: %s (started by gpufleet's agent only)\n",
                 !spec ? spec.error().c_str() : env.error().c_str());
    const int report[2] = {gpufleet::agent::kShimBadArgs, EINVAL};
    (void)!write(3, report, sizeof report);
    return 127;
  }
  spec.value().env = std::move(env.value());
  gpufleet::agent::RunShim(spec.value());
}

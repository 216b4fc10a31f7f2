#pragma once
// For end-to-end tests that start `up` servers or agents: jobs outlive them by design, so a test
// ends what its servers left running, through the job cgroups of the data directory's instance
// (agent/cgroup_limits.h), and removes those cgroups, leaving the machine as it found it.
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "agent/cgroup_limits.h"

namespace gpufleet::e2e {

inline void ReleaseJobCgroups(const std::string& data_dir) {
  agent::CgroupLimits cgroups =
      agent::CgroupLimits::Detect("", agent::CgroupLimits::InstanceTag(data_dir));
  if (!cgroups.available()) return;
  for (int64_t id : cgroups.JobIds()) cgroups.Release(id, 0);
  for (int i = 0; i < 100 && !cgroups.JobIds().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    cgroups.ReleasePending();
  }
  cgroups.RemoveJobsCgroupIfEmpty();
}

// The same for `root` and every directory in it (a test's data directories).
inline void ReleaseJobCgroupsUnder(const std::string& root) {
  ReleaseJobCgroups(root);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    if (entry.is_directory(ec)) ReleaseJobCgroups(entry.path().string());
  }
}

}  // namespace gpufleet::e2e

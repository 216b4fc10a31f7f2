#pragma once
// The commands that only `gpufleet-full` runs (servers, the simulator, the GPU view), with their
// one-line descriptions. `gpufleet` lists them in its help and hands them to gpufleet-full.
#include <string_view>

namespace gpufleet::cli {

inline constexpr std::string_view kVersion = "gpufleet 0.1.0";
inline constexpr const char* kAppDescription =
    "gpufleet: a GPU fleet manager for deep-learning work";

struct FullCommand {
  std::string_view name;
  std::string_view description;
};

inline constexpr FullCommand kFullCommands[] = {
    {"up",
     "Run the controller, a local agent and the SQLite store in one process: submit jobs to it "
     "with `gpufleet submit`"},
    {"controller",
     "Run the controller and its store alone: agents on each GPU machine join it with "
     "`gpufleet agent --controller URL`"},
    {"agent",
     "Node agent: sample this machine's GPUs (NVML) and serve /metrics (Prometheus, "
     "dcgm-exporter names) and /v1/gpus"},
    {"top", "Live view of this machine's GPUs and their processes (q quits; m/s/p/u sort)"},
    {"sim", "Simulate scheduling on cluster traces"},
};

// The description of full command `name` (one of kFullCommands).
constexpr const char* FullCommandDescription(std::string_view name) {
  for (const FullCommand& c : kFullCommands) {
    if (c.name == name) return c.description.data();
  }
  return "";
}

}  // namespace gpufleet::cli

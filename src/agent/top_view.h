#pragma once
// The screen of `gpufleet top`, as text: a header, one block per GPU (utilization and memory bars,
// temperature, power, health, a utilization sparkline), then the GPU processes sorted by the
// chosen key. A pure function of its inputs, so it is tested without a terminal.
#include <string>
#include <vector>

#include "agent/sample_json.h"
#include "gpu/gpu_sample.h"

namespace gpufleet::agent {

enum class ProcessSort { kGpuMemory, kSmUtil, kPid, kUser };

struct TopModel {
  HostInfo host;
  std::vector<gpu::GpuSample> samples;
  std::vector<std::vector<float>> util_history;  // per GPU: recent GPU util %, oldest first
  ProcessSort sort = ProcessSort::kGpuMemory;
  std::string clock_text;  // e.g. "12:00:01", shown in the header
};

// Renders `model` into lines no wider than `width` display columns; at most `height` lines when
// `height` > 0 (processes that do not fit are summarized in a last line).
std::vector<std::string> RenderTop(const TopModel& model, int width, int height);

// The key that selects a sort order ('m', 's', 'p', 'u'), or false when `key` is not one.
bool SortForKey(char key, ProcessSort& sort);
const char* SortName(ProcessSort sort);

}  // namespace gpufleet::agent

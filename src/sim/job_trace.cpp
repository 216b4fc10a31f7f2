#include "sim/job_trace.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <unordered_set>

#include "sim/csv_table.h"
#include "sim/openb_trace.h"
#include "sim/philly_trace.h"

namespace gpufleet::sim {
namespace {

core::Result<bool> CheckOptions(const TraceReadOptions& o) {
  if (o.limit < 0 || o.window_start_s < 0 || o.window_end_s < 0) {
    return core::Error{"trace options: limit and time window must not be negative"};
  }
  return true;
}

// Sorts by submit time (stably), keeps the window and the limit, rebases submit times.
void KeepWindow(std::vector<TraceJob>& jobs, const TraceReadOptions& o) {
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit_s < b.submit_s; });
  if (jobs.empty()) return;
  const int64_t first = jobs.front().submit_s;
  std::vector<TraceJob> kept;
  for (TraceJob& j : jobs) {
    const int64_t t = j.submit_s - first;
    if (t < o.window_start_s || (o.window_end_s > 0 && t >= o.window_end_s)) continue;
    if (o.limit > 0 && static_cast<int64_t>(kept.size()) >= o.limit) break;
    kept.push_back(std::move(j));
  }
  if (!kept.empty()) {
    const int64_t base = kept.front().submit_s;
    for (TraceJob& j : kept) j.submit_s -= base;
  }
  jobs = std::move(kept);
}

core::Result<JobTrace> ReadOpenbTimeMode(const std::string& path, const TraceReadOptions& options,
                                         const core::GpuCatalog& catalog) {
  auto pods = ReadOpenbPods(path, catalog);
  if (!pods) return core::Error{pods.error()};
  JobTrace trace;
  for (const OpenbPod& pod : pods.value()) {
    if (pod.creation_time < 0) {
      return core::Error{path + ": no creation_time/deletion_time columns: not a time-mode trace"};
    }
    const core::JobSpec& spec = pod.job;
    if (spec.num_gpu <= 0 || pod.deletion_time < 0 || pod.deletion_time <= pod.creation_time) {
      ++trace.skipped;
      continue;
    }
    TraceJob j;
    j.id = static_cast<int64_t>(trace.jobs.size());
    j.submit_s = pod.creation_time;
    j.duration_s = pod.deletion_time - pod.creation_time;
    j.num_gpus = spec.num_gpu;
    j.gpu_milli = spec.gpu_milli;
    j.cpu_milli_per_gpu = spec.cpu_milli / spec.num_gpu;
    j.memory_mib_per_gpu = spec.memory_mib / spec.num_gpu;
    j.gpu_models = spec.gpu_models;
    j.vc = spec.queue.empty() ? "default" : spec.queue;
    trace.jobs.push_back(std::move(j));
  }
  KeepWindow(trace.jobs, options);
  for (size_t i = 0; i < trace.jobs.size(); ++i) trace.jobs[i].id = static_cast<int64_t>(i);
  if (trace.skipped > 0) {
    trace.note =
        std::to_string(trace.skipped) + " pods skipped: no GPU, no deletion time, or no run time";
  }
  return trace;
}

}  // namespace

core::Result<JobTrace> ParseGenericCsv(std::string text, const std::string& path,
                                       const TraceReadOptions& options) {
  if (auto ok = CheckOptions(options); !ok) return core::Error{ok.error()};
  auto table = CsvTable::Parse(std::move(text), path, {"id", "submit_s", "duration_s", "num_gpus"});
  if (!table) return core::Error{table.error()};
  const CsvTable& t = table.value();
  JobTrace trace;
  std::unordered_set<int64_t> ids;
  for (size_t r = 0; r < t.rows(); ++r) {
    TraceJob j;
    auto id = t.Int(r, "id");
    if (!id) return core::Error{id.error()};
    if (!ids.insert(id.value()).second) {
      return core::Error{t.Where(r, "id") + ": duplicate id " + std::to_string(id.value())};
    }
    j.id = id.value();
    auto submit = t.NonNegativeInt(r, "submit_s");
    if (!submit) return core::Error{submit.error()};
    if (submit.value() > int64_t{100} * 366 * 86400) {
      return core::Error{t.Where(r, "submit_s") + ": more than a hundred years, got " +
                         std::to_string(submit.value())};
    }
    j.submit_s = submit.value();
    auto duration = t.Int(r, "duration_s");
    if (!duration) return core::Error{duration.error()};
    if (duration.value() <= 0 || duration.value() > int64_t{10} * 366 * 86400) {
      return core::Error{t.Where(r, "duration_s") + ": must be positive and at most ten years, got " +
                         std::to_string(duration.value())};
    }
    j.duration_s = duration.value();
    auto gpus = t.Int(r, "num_gpus");
    if (!gpus) return core::Error{gpus.error()};
    if (gpus.value() < 1 || gpus.value() > 100000) {
      return core::Error{t.Where(r, "num_gpus") + ": must be in 1..100000, got " +
                         std::to_string(gpus.value())};
    }
    j.num_gpus = static_cast<int>(gpus.value());
    j.vc = std::string(t.Field(r, "queue"));
    if (j.vc.empty()) j.vc = "default";
    if (!t.Field(r, "gpu_milli").empty()) {
      auto milli = t.Int(r, "gpu_milli");
      if (!milli) return core::Error{milli.error()};
      if (milli.value() < 1 || milli.value() > core::kGpuMilli ||
          (milli.value() < core::kGpuMilli && j.num_gpus != 1)) {
        return core::Error{t.Where(r, "gpu_milli") +
                           ": must be 1..1000, and below 1000 only with num_gpus 1"};
      }
      j.gpu_milli = static_cast<int>(milli.value());
    }
    for (const char* column : {"cpu_milli", "memory_mib"}) {
      if (t.Field(r, column).empty()) continue;
      auto v = t.NonNegativeInt(r, column);
      if (!v) return core::Error{v.error()};
      (std::string_view(column) == "cpu_milli" ? j.cpu_milli_per_gpu : j.memory_mib_per_gpu) =
          v.value();
    }
    trace.jobs.push_back(std::move(j));
  }
  KeepWindow(trace.jobs, options);
  return trace;
}

core::Result<JobTrace> ReadJobTrace(const std::string& format_and_path,
                                    const TraceReadOptions& options,
                                    const core::GpuCatalog& catalog) {
  if (auto ok = CheckOptions(options); !ok) return core::Error{ok.error()};
  const size_t colon = format_and_path.find(':');
  const std::string format = colon == std::string::npos ? "" : format_and_path.substr(0, colon);
  const std::string path = colon == std::string::npos ? "" : format_and_path.substr(colon + 1);
  if (format == "philly") {
    PhillyReadOptions read{options.limit, options.window_start_s, options.window_end_s};
    auto philly = ReadPhillyTrace(path, read);
    if (!philly) return core::Error{philly.error()};
    JobTrace trace;
    trace.jobs.reserve(philly.value().jobs.size());
    for (const PhillyJob& p : philly.value().jobs) {
      TraceJob j;
      j.id = p.id;
      j.submit_s = p.submit_s;
      j.duration_s = p.duration_s;
      j.num_gpus = p.num_gpus;
      j.vc = p.vc;
      trace.jobs.push_back(std::move(j));
    }
    return trace;
  }
  if (format == "openb") return ReadOpenbTimeMode(path, options, catalog);
  if (format == "csv") {
    std::ifstream in(path, std::ios::binary);
    if (!in) return core::Error{"cannot read " + path};
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return ParseGenericCsv(std::move(text), path, options);
  }
  return core::Error{"--trace must be FORMAT:FILE with FORMAT philly, openb or csv; got '" +
                     format_and_path + "'"};
}

}  // namespace gpufleet::sim

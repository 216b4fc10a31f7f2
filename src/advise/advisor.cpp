#include "advise/advisor.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

namespace gpufleet::advise {

namespace {

constexpr std::array<std::string_view, 11> kKindNames = {
    "idle",           "unused_gpus",         "input_bound_cpu", "input_bound_io",
    "transfer_bound", "under_batched",       "memory_bound",    "throttled",
    "imbalance",      "over_requested_host", "efficient"};

constexpr double kBucketH = static_cast<double>(kBucketMs) / 3'600'000.0;

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}
std::string Pct(double v) { return Fmt("%.0f%%", v); }
std::string GpuH(double v) { return Fmt(v < 10 ? "%.2f GPU-h" : "%.0f GPU-h", v); }
std::string Minutes(int64_t ms) { return Fmt("%.0f min", static_cast<double>(ms) / 60'000.0); }

std::vector<std::string> MemoryAdvice() {
  return {
      "Trade compute for memory: gradient checkpointing (`torch.utils.checkpoint`), a smaller "
      "micro-batch with gradient accumulation, mixed precision; shard with FSDP across GPUs.",
      "If the model needs it, ask for a GPU model with more memory (one with 80 GB or more)."};
}

// What the advisor derives once from the series and the facts.
struct JobView {
  const JobUsage* usage = nullptr;
  int alloc_gpus = 0;      // GPUs allocated (facts, else measured)
  int measured_gpus = 0;   // GPUs with a per-GPU total
  std::vector<bool> used;  // parallel to usage->gpus: showed activity or memory
  int used_gpus = 0;
  std::vector<bool> idle;  // parallel to usage->buckets: in an idle stretch long enough
  // Parallel to usage->buckets: the hours each bucket covers (the last one of a run may be
  // partial) times the job's GPU share: one GPU's allocated time in that bucket.
  std::vector<double> gpu_h;
  double run_h = 0;        // how long it ran (facts, else the series' span)
  double alloc_gpu_h = 0;  // alloc_gpus x run_h x the GPU share
  int64_t end_ms = 0;      // end of the last bucket
  bool ended = false;      // the job has ended (facts)
  double gpu_share = 1;    // the share of each GPU it holds (a --gpu-share job's: below 1)
};

// The mean SM over the used GPUs in bucket `b` (unused GPUs read ~0 and are taken out), of what
// the job holds: a half-share job's own 40% of the GPU is 80% of its half.
double UsedSm(const JobView& v, const UsageBucket& b) {
  if (b.sm_mean < 0) return -1;
  const int n = std::max(1, v.measured_gpus), m = std::max(1, v.used_gpus);
  return std::min(100.0, static_cast<double>(b.sm_mean) * n / m / v.gpu_share);
}

enum class Cause { kIo, kCpu, kTransfer, kMemory, kSmallBatch, kUnexplained, kCount };

Cause CauseOf(const UsageBucket& b, const AdviseOptions& o) {
  if (b.io_pressure_pct >= o.io_stall_pct) return Cause::kIo;
  const bool saturated = b.cpu_used_pct >= o.cpu_saturated_pct;
  const bool quota_bound = saturated && b.cpu_throttled_pct >= o.cpu_throttled_pct;
  // Where no quota's throttling is measured (no cgroup: the usage comes from /proc, and nothing
  // holds the job to its --cpus), a job using all the CPU it asked for is taken as held by it: on
  // a node with spare cores its threads never wait for one, so the pressure figure stays low.
  const bool unmeasured_bound = saturated && b.cpu_throttled_pct < 0;
  if (quota_bound || unmeasured_bound || b.cpu_pressure_pct >= o.cpu_pressure_pct) {
    return Cause::kCpu;
  }
  if (b.pcie_mb_s >= o.pcie_high_mb_s) return Cause::kTransfer;
  if (b.fb_used_pct >= o.gpu_mem_full_pct || b.mem_used_pct >= o.host_mem_full_pct) {
    return Cause::kMemory;
  }
  // Small batch: memory to spare, and no host pressure (none of the above held).
  if (b.fb_used_pct >= 0 && b.fb_used_pct < o.gpu_mem_small_pct) return Cause::kSmallBatch;
  return Cause::kUnexplained;
}

// A minute in which no step ran: every GPU at about 0% SM, and unless a kernel ran at all in it
// (SM above 0 in some sample), whatever the host did: a CPU-only phase holding a GPU (a notebook
// cell in pandas) is idle for the GPU. A minute with a kernel now and then whose host is held by
// a cause (a CPU-saturated, I/O-stalled or copying job at 0.5% SM) is a starved minute: the job
// works and its GPUs wait on it.
bool IdleBucket(const UsageBucket& b, const AdviseOptions& o) {
  if (b.sm_mean < 0 || b.sm_mean > o.idle_sm_pct || b.active_gpus >= 0.5) return false;
  if (!(b.sm_max > 0)) return true;
  const Cause c = CauseOf(b, o);
  return c != Cause::kIo && c != Cause::kCpu && c != Cause::kTransfer;
}

JobView View(const JobUsage& usage, const JobFacts& facts, const AdviseOptions& o) {
  JobView v;
  v.usage = &usage;
  v.measured_gpus = static_cast<int>(usage.gpus.size());
  v.alloc_gpus = facts.gpus > 0 ? facts.gpus : v.measured_gpus;
  for (const GpuTotal& g : usage.gpus) {
    const double busy = g.samples > 0 ? static_cast<double>(g.busy_samples) / g.samples : 0;
    const bool used = busy >= o.used_busy_share || g.mem_peak_mib >= o.used_mem_mib;
    v.used.push_back(used);
    v.used_gpus += used ? 1 : 0;
  }
  // None passed the bar (a job starved to ~0% SM, on a small context): nothing tells its GPUs
  // apart, so all count as the ones it meant to use, and its starved minutes are charged on them.
  if (v.used_gpus == 0) {
    v.used.assign(v.used.size(), true);
    v.used_gpus = v.measured_gpus;
  }
  const auto& bs = usage.buckets;
  v.idle.assign(bs.size(), false);
  for (std::size_t i = 0; i < bs.size();) {
    std::size_t j = i;
    while (j < bs.size() && IdleBucket(bs[j], o) &&
           (j == i || bs[j].start_ms == bs[j - 1].start_ms + kBucketMs)) {
      ++j;
    }
    if (j > i && static_cast<int64_t>(j - i) * kBucketMs >= o.idle_min_ms) {
      std::fill(v.idle.begin() + static_cast<std::ptrdiff_t>(i),
                v.idle.begin() + static_cast<std::ptrdiff_t>(j), true);
    }
    i = std::max(j, i + 1);
  }
  // An ended job that never ran a step was idle however short its life: no start-up is left to
  // wait for. Minutes without a GPU reading neither count for it nor against it.
  const auto unmeasured = [](const UsageBucket& b) { return b.sm_mean < 0; };
  if (facts.ended && !std::all_of(bs.begin(), bs.end(), unmeasured) &&
      std::all_of(bs.begin(), bs.end(),
                  [&](const UsageBucket& b) { return unmeasured(b) || IdleBucket(b, o); })) {
    for (std::size_t i = 0; i < bs.size(); ++i) v.idle[i] = !unmeasured(bs[i]);
  }
  v.ended = facts.ended;
  v.end_ms = bs.empty() ? 0 : bs.back().start_ms + kBucketMs;
  v.run_h = facts.run_ms > 0 ? static_cast<double>(facts.run_ms) / 3'600'000.0
                             : static_cast<double>(bs.size()) * kBucketH;
  const double share = facts.gpu_share > 0 && facts.gpu_share < 1 ? facts.gpu_share : 1.0;
  v.gpu_share = share;
  v.gpu_h.assign(bs.size(), kBucketH * share);
  if (!bs.empty() && facts.run_ms > 0 && facts.run_ms >= bs.back().start_ms) {  // ends inside it
    const int64_t covered = std::min(kBucketMs, facts.run_ms - bs.back().start_ms);
    v.gpu_h.back() = static_cast<double>(covered) / 3'600'000.0 * share;
  }
  v.alloc_gpu_h = std::max(1e-9, v.alloc_gpus * v.run_h * share);
  return v;
}

Severity SeverityOf(double waste_gpu_h, const JobView& v, const AdviseOptions& o) {
  const double share = waste_gpu_h / v.alloc_gpu_h;
  if (share >= o.critical_share) return Severity::kCritical;
  if (share >= o.warning_share) return Severity::kWarning;
  return Severity::kInfo;
}

Evidence Ev(std::string figure, double value, std::string unit, int64_t from, int64_t to) {
  return Evidence{std::move(figure), value, std::move(unit), from, to};
}

// ---- idle and unused GPUs ----

std::optional<Finding> FindIdle(const JobView& v) {
  const auto& bs = v.usage->buckets;
  int64_t idle_ms = 0, longest = 0, run = 0, from = 0, longest_from = 0, longest_to = 0;
  double sm_sum = 0, idle_gpu_h = 0;
  for (std::size_t i = 0; i < bs.size(); ++i) {
    if (!v.idle[i]) {
      run = 0;
      continue;
    }
    sm_sum += bs[i].sm_mean;
    if (run == 0) from = bs[i].start_ms;
    run += kBucketMs;
    idle_ms += kBucketMs;
    idle_gpu_h += v.gpu_h[i];
    if (run > longest) {
      longest = run;
      longest_from = from;
      longest_to = bs[i].start_ms + kBucketMs;
    }
  }
  if (idle_ms == 0) return std::nullopt;
  Finding f;
  f.kind = FindingKind::kIdle;
  f.waste_gpu_h = v.alloc_gpus * idle_gpu_h;
  f.summary = "all " + std::to_string(v.alloc_gpus) + " GPU(s) sat at ~0% SM for " +
              Minutes(idle_ms) + " (longest stretch " + Minutes(longest) + "), " +
              GpuH(f.waste_gpu_h) + " allocated for nothing";
  f.evidence = {Ev("idle_minutes", static_cast<double>(idle_ms) / 60'000.0, "min", 0, v.end_ms),
                Ev("longest_idle_minutes", static_cast<double>(longest) / 60'000.0, "min",
                   longest_from, longest_to),
                Ev("sm_mean", sm_sum / static_cast<double>(idle_ms / kBucketMs), "% (idle minutes)",
                   0, v.end_ms)};
  f.advice = {
      "Release the GPUs when the work is done: end the job (or the notebook kernel) instead of "
      "leaving it open; run interactive exploration on a small or shared GPU.",
      "For work with long pauses (waiting on data, on a person), submit each step as its own "
      "job so the GPUs go back between steps."};
  return f;
}

std::optional<Finding> FindUnused(const JobView& v) {
  if (v.measured_gpus == 0 || v.used_gpus == 0 || v.used_gpus >= v.alloc_gpus) return std::nullopt;
  const auto& bs = v.usage->buckets;
  double active_h = 0;
  for (std::size_t i = 0; i < bs.size(); ++i) active_h += v.idle[i] ? 0 : v.gpu_h[i];
  const int unused = v.measured_gpus - v.used_gpus;
  if (unused <= 0 || active_h <= 0) return std::nullopt;
  Finding f;
  f.kind = FindingKind::kUnusedGpus;
  f.waste_gpu_h = unused * active_h;
  std::string names;
  for (std::size_t i = 0; i < v.used.size(); ++i) {
    if (v.used[i]) continue;
    const GpuTotal& g = v.usage->gpus[i];
    names += (names.empty() ? "" : ", ") + g.node + ":" + std::to_string(g.index);
  }
  f.summary = std::to_string(v.alloc_gpus) + " GPUs allocated, only " +
              std::to_string(v.used_gpus) + " ever busy or holding memory; unused: " + names +
              " (" + GpuH(f.waste_gpu_h) + ")";
  f.evidence = {Ev("gpus_allocated", v.alloc_gpus, "GPUs", 0, v.end_ms),
                Ev("gpus_used", v.used_gpus, "GPUs", 0, v.end_ms)};
  f.advice = {
      "Ask for " + std::to_string(v.used_gpus) +
          " GPU(s), or make the script use all of them: "
          "launch with `torchrun --nproc_per_node=" +
          std::to_string(v.alloc_gpus) +
          "` and wrap the model in DistributedDataParallel (DataParallel or a plain script uses "
          "one GPU).",
      "Check that each rank picks its own device (`torch.cuda.set_device(local_rank)`) and that "
      "CUDA_VISIBLE_DEVICES is not narrowed inside the job."};
  return f;
}

// ---- starved minutes and their causes ----

// Sums over the starved minutes of one cause.
struct Starved {
  double waste_gpu_h = 0;
  int minutes = 0;
  int64_t from_ms = -1, to_ms = 0;
  double sm = 0, sm_spread = 0, cpu_used = 0, cpu_throttled = 0, cpu_pressure = 0, io = 0;
  double pcie = 0, fb = 0, host_mem = 0;
  int n_cpu = 0, n_throttle = 0, n_cpu_pressure = 0, n_io = 0, n_pcie = 0, n_fb = 0, n_mem = 0;
  void Add(const UsageBucket& b, double used_sm, double waste) {
    waste_gpu_h += waste;
    ++minutes;
    if (from_ms < 0) from_ms = b.start_ms;
    to_ms = b.start_ms + kBucketMs;
    sm += used_sm;
    if (b.sm_max >= 0 && b.sm_min >= 0) sm_spread += b.sm_max - b.sm_min;
    auto add = [](double& sum, int& n, float x) {
      if (x >= 0) sum += x, ++n;
    };
    add(cpu_used, n_cpu, b.cpu_used_pct);
    add(cpu_throttled, n_throttle, b.cpu_throttled_pct);
    add(cpu_pressure, n_cpu_pressure, b.cpu_pressure_pct);
    add(io, n_io, b.io_pressure_pct);
    add(pcie, n_pcie, b.pcie_mb_s);
    add(fb, n_fb, b.fb_used_pct);
    add(host_mem, n_mem, b.mem_used_pct);
  }
  static double Mean(double sum, int n) { return n > 0 ? sum / n : -1; }
};

std::array<Starved, static_cast<std::size_t>(Cause::kCount)> StarvedByCause(
    const JobView& v, const AdviseOptions& o) {
  std::array<Starved, static_cast<std::size_t>(Cause::kCount)> out{};
  const auto& bs = v.usage->buckets;
  for (std::size_t i = 0; i < bs.size(); ++i) {
    // A minute with nothing running is idle, short or long: no step ran, so no bottleneck held it.
    if (v.idle[i] || v.used_gpus == 0 || IdleBucket(bs[i], o)) continue;
    const double sm = UsedSm(v, bs[i]);
    if (sm < 0 || sm >= o.good_sm_pct) continue;
    const double waste = v.used_gpus * (1.0 - sm / o.good_sm_pct) * v.gpu_h[i];
    out[static_cast<std::size_t>(CauseOf(bs[i], o))].Add(bs[i], sm, waste);
  }
  return out;
}

std::string Span(const Starved& s) {
  return std::to_string(s.minutes) + " min between minute " + std::to_string(s.from_ms / 60'000) +
         " and " + std::to_string(s.to_ms / 60'000);
}

Finding StarvedFinding(FindingKind kind, const Starved& s, const JobView& v,
                       const JobFacts& facts) {
  Finding f;
  f.kind = kind;
  f.waste_gpu_h = s.waste_gpu_h;
  const double sm = s.sm / s.minutes;
  f.evidence.push_back(Ev("sm_mean", sm, "%", s.from_ms, s.to_ms));
  f.evidence.push_back(Ev("starved_minutes", s.minutes, "min", s.from_ms, s.to_ms));
  auto ev = [&](const char* figure, double sum, int n, const char* unit) {
    if (n > 0) f.evidence.push_back(Ev(figure, sum / n, unit, s.from_ms, s.to_ms));
  };
  const std::string head = "SM averaged " + Pct(sm) + " over " + Span(s);
  const double cores = static_cast<double>(v.usage->cpu_alloc_milli > 0 ? v.usage->cpu_alloc_milli
                                                                        : facts.cpu_milli) /
                       1000;
  switch (kind) {
    case FindingKind::kInputBoundCpu: {
      ev("cpu_used_pct", s.cpu_used, s.n_cpu, "%");
      ev("cpu_throttled_pct", s.cpu_throttled, s.n_throttle, "%");
      ev("cpu_pressure_pct", s.cpu_pressure, s.n_cpu_pressure, "%");
      ev("sm_max_minus_min", s.sm_spread, s.minutes, "%");
      f.summary = head + " while the job's CPU ran at " + Pct(Starved::Mean(s.cpu_used, s.n_cpu)) +
                  " of its allocation" +
                  (s.n_throttle > 0
                       ? ", throttled " + Pct(Starved::Mean(s.cpu_throttled, s.n_throttle)) +
                             " of the time"
                       : " (no CPU limit enforced on this node)") +
                  ": the input pipeline cannot keep up";
      // Each loader worker wants a core of its own; ask for at least 4, or twice the present.
      const double ask = std::max(4.0, std::ceil(2 * cores));
      f.advice = {
          "Ask for more CPUs (`--cpus " + Fmt("%.0f", ask) +
              "`) and give the DataLoader a worker per core less one (`num_workers=" +
              Fmt("%.0f", ask - 1) + "`), with `pin_memory=True` and `prefetch_factor=4`.",
          "Move decoding and augmentation to the GPU (NVIDIA DALI, or torchvision.transforms.v2 "
          "on CUDA tensors) so the CPU only reads bytes."};
      break;
    }
    case FindingKind::kInputBoundIo:
      ev("io_pressure_pct", s.io, s.n_io, "%");
      f.summary = head + " while the job's processes stalled on I/O " +
                  Pct(Starved::Mean(s.io, s.n_io)) + " of the time: reads cannot feed the GPU";
      f.advice = {
          "Stage the data set on local NVMe (copy it to the node's scratch at the start) or cache "
          "it after the first epoch, instead of reading it from network storage each step.",
          "Pack many small files into shards (WebDataset, TFRecord-style tar shards) and read "
          "them with more parallelism (more DataLoader workers, larger reads)."};
      break;
    case FindingKind::kTransferBound:
      ev("pcie_mb_s", s.pcie, s.n_pcie, "MB/s");
      f.summary = head + " with " + Fmt("%.0f", Starved::Mean(s.pcie, s.n_pcie)) +
                  " MB/s of PCIe traffic per GPU: the steps wait on host-device copies";
      f.advice = {
          "Keep data and intermediate results on the GPU: avoid `.cpu()`/`.item()` each step, "
          "move the data set (or its preprocessed tensors) to the GPU once if it fits.",
          "Copy in larger batches from pinned memory (`pin_memory=True`, "
          "`.to(device, non_blocking=True)`) so copies overlap compute."};
      break;
    case FindingKind::kMemoryBound:
      ev("fb_used_pct", s.fb, s.n_fb, "%");
      ev("mem_used_pct", s.host_mem, s.n_mem, "%");
      f.summary = head + " with GPU memory " + Pct(Starved::Mean(s.fb, s.n_fb)) +
                  " full (host memory " + Pct(Starved::Mean(s.host_mem, s.n_mem)) +
                  " of its limit): memory, not compute, sets the pace";
      f.advice = MemoryAdvice();
      break;
    case FindingKind::kUnderBatched:
      ev("fb_used_pct", s.fb, s.n_fb, "%");
      ev("cpu_used_pct", s.cpu_used, s.n_cpu, "%");
      f.summary = head + " using only " + Pct(Starved::Mean(s.fb, s.n_fb)) +
                  " of GPU memory and no host pressure: the steps are too small for the GPU";
      f.advice = {
          "Raise the batch size (2-4x, scaling the learning rate with it) until GPU memory is "
          "about 80% used; turn on mixed precision (`torch.autocast`, bf16).",
          "Cut launch overhead: `torch.compile(model)` or CUDA graphs for small, repeated steps."};
      break;
    default:
      break;
  }
  return f;
}

std::optional<Finding> FindOom(const JobView& v) {
  if (v.usage->oom_kills <= 0) return std::nullopt;
  Finding f;
  f.kind = FindingKind::kMemoryBound;
  f.waste_gpu_h = v.alloc_gpu_h;
  double peak = -1;
  for (const UsageBucket& b : v.usage->buckets)
    peak = std::max(peak, static_cast<double>(b.mem_used_pct));
  f.summary = std::to_string(v.usage->oom_kills) +
              " process(es) killed by the OOM killer at the job's memory limit (peak " + Pct(peak) +
              "); the work since the last checkpoint is lost (up to " + GpuH(f.waste_gpu_h) + ")";
  f.evidence = {Ev("oom_kills", static_cast<double>(v.usage->oom_kills), "processes", 0, v.end_ms),
                Ev("mem_used_pct", peak, "% (peak)", 0, v.end_ms)};
  f.advice = MemoryAdvice();
  f.advice[1] =
      "Ask for more host memory (`--memory`), or cut what each DataLoader worker holds "
      "(fewer workers, no copy of the data set per worker, `persistent_workers=False`).";
  return f;
}

std::optional<Finding> FindThrottled(const JobView& v, const AdviseOptions& o) {
  const auto& bs = v.usage->buckets;
  double sum = 0, pw = 0;
  int n = 0, npw = 0;
  double counted_h = 0;
  int64_t from = -1, to = 0;
  for (std::size_t i = 0; i < bs.size(); ++i) {
    if (v.idle[i] || bs[i].throttled_pct < 0 || bs[i].active_gpus < 0.5) continue;
    sum += bs[i].throttled_pct;
    ++n;
    counted_h += v.gpu_h[i];
    if (bs[i].power_pct >= 0) pw += bs[i].power_pct, ++npw;
    if (from < 0) from = bs[i].start_ms;
    to = bs[i].start_ms + kBucketMs;
  }
  if (n == 0 || sum / n < o.throttled_share_pct) return std::nullopt;
  const double share = sum / n;
  Finding f;
  f.kind = FindingKind::kThrottled;
  f.for_admins = true;
  std::vector<std::string> nodes;
  for (const GpuTotal& g : v.usage->gpus) {
    if (std::find(nodes.begin(), nodes.end(), g.node) == nodes.end()) nodes.push_back(g.node);
  }
  for (const std::string& node : nodes) f.node += (f.node.empty() ? "" : ",") + node;
  f.waste_gpu_h = std::max(1, v.used_gpus) * share / 100.0 * o.throttle_slowdown * counted_h;
  f.summary = "GPUs on " + f.node + " slowed for heat or power in " + Pct(share) +
              " of their samples (power at " + Pct(npw > 0 ? pw / npw : -1) +
              " of the limit): a node problem for the admins";
  f.evidence = {Ev("throttled_pct", share, "%", from, to)};
  if (npw > 0) f.evidence.push_back(Ev("power_pct", pw / npw, "%", from, to));
  f.advice = {"Admins: check cooling, fans and power capping on " + f.node +
                  " (nvidia-smi -q -d PERFORMANCE names the reason); drain it if it persists.",
              "Nothing to change in your code; rerun elsewhere if the job is slower than usual."};
  return f;
}

std::optional<Finding> FindImbalance(const JobView& v, const AdviseOptions& o) {
  if (v.used_gpus < 2) return std::nullopt;
  // Groups: nodes when the job spans several, else single GPUs.
  std::map<std::string, std::pair<double, int>> by_node;
  for (std::size_t i = 0; i < v.used.size(); ++i) {
    const GpuTotal& g = v.usage->gpus[i];
    if (!v.used[i] || g.samples == 0) continue;
    by_node[g.node].first += g.sm_mean();
    ++by_node[g.node].second;
  }
  struct Group {
    std::string name, node;
    double sm;
    int gpus;
  };
  std::vector<Group> groups;
  if (by_node.size() >= 2) {
    for (const auto& [node, s] : by_node)
      groups.push_back({"node " + node, node, s.first / s.second, s.second});
  } else {
    for (std::size_t i = 0; i < v.used.size(); ++i) {
      const GpuTotal& g = v.usage->gpus[i];
      if (v.used[i] && g.samples > 0) {
        groups.push_back({"GPU " + g.node + ":" + std::to_string(g.index), g.node, g.sm_mean(), 1});
      }
    }
  }
  if (groups.size() < 2) return std::nullopt;
  std::sort(groups.begin(), groups.end(),
            [](const Group& a, const Group& b) { return a.sm < b.sm; });
  std::vector<double> rest;
  for (std::size_t i = 1; i < groups.size(); ++i) rest.push_back(groups[i].sm);
  std::nth_element(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(rest.size() / 2),
                   rest.end());
  const double median = rest[rest.size() / 2];
  const Group& low = groups.front();
  if (low.sm >= o.imbalance_ratio * median || median - low.sm < o.imbalance_gap_pct) {
    return std::nullopt;
  }
  double active_h = 0;
  for (std::size_t i = 0; i < v.idle.size(); ++i) active_h += v.idle[i] ? 0 : v.gpu_h[i];
  Finding f;
  f.kind = FindingKind::kImbalance;
  f.node = low.node;
  f.waste_gpu_h = low.gpus * (1.0 - low.sm / median) * active_h;
  f.summary = low.name + " averaged " + Pct(low.sm) + " SM against " + Pct(median) +
              " on the rest of the job: it lags, and synchronous steps wait for it";
  f.evidence = {Ev("sm_mean_lowest", low.sm, "%", 0, v.end_ms),
                Ev("sm_mean_others_median", median, "%", 0, v.end_ms)};
  f.advice = {
      "Check for data skew: shard the data evenly (DistributedSampler with equal-sized "
      "shards, drop_last=True) and compare per-rank step times.",
      "If the data is even, the " + low.name +
          " is slow (its disk, network or CPU): "
          "report it to the admins or exclude it on resubmission."};
  return f;
}

std::optional<Finding> FindOverRequested(const JobView& v, const AdviseOptions& o) {
  const JobUsage& u = *v.usage;
  double cpu_sum = 0, cpu_peak = 0, mem_peak = -1;
  int n_cpu = 0, minutes = 0;
  for (const UsageBucket& b : u.buckets) {
    if (b.cpu_used_pct >= 0)
      cpu_sum += b.cpu_used_pct, ++n_cpu, cpu_peak = std::max<double>(cpu_peak, b.cpu_used_pct);
    mem_peak = std::max(mem_peak, static_cast<double>(b.mem_used_pct));
    ++minutes;
  }
  if (static_cast<int64_t>(minutes) * kBucketMs < o.over_min_run_ms) return std::nullopt;
  Finding f;
  f.kind = FindingKind::kOverRequestedHost;
  std::vector<std::string> parts;
  if (n_cpu > 0 && u.cpu_alloc_milli > 0) {
    const double mean = cpu_sum / n_cpu;
    const double unused_milli = u.cpu_alloc_milli * (1 - mean / 100);
    if (mean <= o.over_cpu_used_pct && unused_milli >= o.over_cpu_slack_milli) {
      const double cores = u.cpu_alloc_milli / 1000.0;
      parts.push_back("CPU: used " + Pct(mean) + " of " + Fmt("%.0f", cores) + " cores");
      f.evidence.push_back(Ev("cpu_used_pct", mean, "% (mean)", 0, v.end_ms));
      f.advice.push_back("Ask for about " +
                         Fmt("%.0f", std::max(1.0, std::ceil(cores * cpu_peak / 100 * 1.25))) +
                         " CPUs (`--cpus`): your peak minute used " + Pct(cpu_peak) + " of " +
                         Fmt("%.0f", cores) + ".");
    }
  }
  if (mem_peak >= 0 && u.mem_alloc_mib > 0) {
    const double unused_mib = u.mem_alloc_mib * (1 - mem_peak / 100);
    if (mem_peak <= o.over_mem_used_pct && unused_mib >= o.over_mem_slack_mib) {
      parts.push_back("memory: peak " + Pct(mem_peak) + " of " +
                      Fmt("%.1f GiB", u.mem_alloc_mib / 1024.0));
      f.evidence.push_back(Ev("mem_used_pct", mem_peak, "% (peak)", 0, v.end_ms));
      f.advice.push_back(
          "Ask for about " +
          Fmt("%.0f GiB", std::max(1.0, std::ceil(u.mem_alloc_mib * mem_peak / 100 * 1.5 / 1024))) +
          " of memory (`--memory`): 1.5x your peak.");
    }
  }
  if (parts.empty()) return std::nullopt;
  f.summary = "Host resources asked far above use over the job's life (";
  for (std::size_t i = 0; i < parts.size(); ++i) f.summary += (i ? "; " : "") + parts[i];
  f.summary += "): they could have served other jobs on the node";
  return f;
}

// The one finding when nothing else is: "efficient" only at the good SM level; below it, the
// summary says the SM was low and why no kind was named.
Finding Efficient(const JobView& v, const Starved& unexplained, const AdviseOptions& o) {
  Finding f;
  f.kind = FindingKind::kEfficient;
  double sm = 0;
  int n = 0, idle = 0;
  for (const UsageBucket& b : v.usage->buckets) {
    if (IdleBucket(b, o)) {
      ++idle;
      continue;
    }
    const double s = UsedSm(v, b);
    if (s >= 0) sm += s, ++n;
  }
  const double mean = n > 0 ? sm / n : -1;
  f.evidence = {Ev("sm_mean", mean, "% (working minutes)", 0, v.end_ms)};
  const std::string idle_note =
      idle > 0 ? ", besides " + std::to_string(idle) + " min at ~0% SM (shorter than the " +
                     Minutes(o.idle_min_ms) + " idle threshold)"
               : "";
  if (n == 0 && idle == 0) {
    f.summary = "No GPU utilization was measured for this job: nothing to judge";
  } else if (n == 0) {
    f.summary = v.ended ? "No step ran: the GPUs stayed at ~0% SM for all " +
                              std::to_string(idle) + " min measured"
                        : "Too early to judge: the GPUs have been at ~0% SM for all " +
                              std::to_string(idle) + " min so far (start-up)";
  } else if (unexplained.minutes > 0) {
    f.summary = "No bottleneck the advisor can name; SM averaged " + Pct(mean) + ", " +
                Span(unexplained) + " below the good level without a host-side cause";
    f.advice = {
        "If steps seem slow, profile a few with the PyTorch profiler (or Holistic Trace "
        "Analysis) to see where the GPU waits."};
  } else if (mean < o.good_sm_pct) {
    f.summary = "SM averaged " + Pct(mean) + idle_note + ", below the good level of " +
                Pct(o.good_sm_pct) + "; no single cause cost " + Pct(100 * o.min_waste_share) +
                " of the allocation";
    f.advice = {
        "If steps seem slow, profile a few with the PyTorch profiler (or Holistic Trace "
        "Analysis) to see where the GPU waits."};
  } else {
    f.summary = "The job used its " + std::to_string(v.alloc_gpus) + " GPU(s) well: SM averaged " +
                Pct(mean) + idle_note + ", with no host-side bottleneck";
  }
  return f;
}

}  // namespace

std::string_view FindingKindName(FindingKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  return i < kKindNames.size() ? kKindNames[i] : "unknown";
}

bool ParseFindingKind(std::string_view name, FindingKind& out) {
  for (std::size_t i = 0; i < kKindNames.size(); ++i) {
    if (kKindNames[i] == name) {
      out = static_cast<FindingKind>(i);
      return true;
    }
  }
  return false;
}

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "info";
}

std::vector<Finding> Advise(const JobUsage& usage, const JobFacts& facts,
                            const AdviseOptions& options) {
  if (usage.buckets.empty()) return {};
  const JobView v = View(usage, facts, options);
  std::vector<Finding> out;
  auto keep = [&](std::optional<Finding> f) {
    if (f) out.push_back(std::move(*f));
  };
  keep(FindIdle(v));
  keep(FindUnused(v));
  keep(FindOom(v));
  const auto starved = StarvedByCause(v, options);
  const std::pair<Cause, FindingKind> kinds[] = {{Cause::kIo, FindingKind::kInputBoundIo},
                                                 {Cause::kCpu, FindingKind::kInputBoundCpu},
                                                 {Cause::kTransfer, FindingKind::kTransferBound},
                                                 {Cause::kMemory, FindingKind::kMemoryBound},
                                                 {Cause::kSmallBatch, FindingKind::kUnderBatched}};
  for (const auto& [cause, kind] : kinds) {
    const Starved& s = starved[static_cast<std::size_t>(cause)];
    if (s.minutes == 0 || s.waste_gpu_h < options.min_waste_share * v.alloc_gpu_h) continue;
    // One memory finding: an OOM kill already covers the job.
    if (kind == FindingKind::kMemoryBound && usage.oom_kills > 0) continue;
    out.push_back(StarvedFinding(kind, s, v, facts));
  }
  keep(FindThrottled(v, options));
  keep(FindImbalance(v, options));
  keep(FindOverRequested(v, options));
  for (Finding& f : out) {
    if (f.kind == FindingKind::kOverRequestedHost) continue;  // host time, no GPU waste: info
    f.severity = f.kind == FindingKind::kMemoryBound && usage.oom_kills > 0
                     ? Severity::kCritical
                     : SeverityOf(f.waste_gpu_h, v, options);
  }
  if (out.empty()) {
    out.push_back(Efficient(v, starved[static_cast<std::size_t>(Cause::kUnexplained)], options));
  }
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) {
    if (a.waste_gpu_h != b.waste_gpu_h) return a.waste_gpu_h > b.waste_gpu_h;
    if (a.severity != b.severity) return a.severity > b.severity;
    return a.kind < b.kind;
  });
  return out;
}

}  // namespace gpufleet::advise

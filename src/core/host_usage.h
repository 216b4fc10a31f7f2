#pragma once
// `HostUsage`: what a job used of its node's host (CPU, memory, I/O, stalls), as read from its
// cgroup (v1 or v2) or, without one, from /proc of its processes. Every figure is a counter or a
// level with its unit in its name; -1 means "not measured", because the source in use cannot
// give it (see docs/cluster.md for the table of figures per source). Pure data: the agent reads
// it, the heartbeat carries it, the store keeps it, the advisor reads it.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpufleet::core {

// Where the figures came from.
enum class UsageSource {
  kNone,      // nothing measured
  kCgroupV2,  // the job's cgroup on the unified hierarchy
  kCgroupV1,  // the job's cgroups on the v1 hierarchies (cpu, cpuacct, memory, blkio)
  kProc,      // sampled from /proc of the job's processes (no cgroup)
};
std::string_view UsageSourceName(UsageSource source);  // "", "cgroup-v2", "cgroup-v1", "proc"
bool ParseUsageSource(std::string_view name, UsageSource& out);

enum class UsageFigure {
  kCpuUsageUs,            // CPU time used, all CPUs together
  kCpuThrottledPeriods,   // CFS periods in which the job hit its CPU quota
  kCpuThrottledUs,        // time it spent throttled
  kCpuWaitUs,             // time its threads waited runnable for a CPU (run queue)
  kMemoryCurrentBytes,    // memory charged to it now (at the end: when last read)
  kMemoryPeakBytes,       // the most charged to it at once
  kIoReadBytes,           // bytes read from block devices
  kIoWriteBytes,          // bytes written to block devices
  kOomKills,              // processes the kernel's OOM killer ended at its memory limit
  kCpuPressureSomeUs,     // PSI: time some of its tasks stalled on CPU (v2 only)
  kIoPressureSomeUs,      // ... on I/O
  kMemoryPressureSomeUs,  // ... on memory
  kIoBlockedUs,           // time some process of the job sat in uninterruptible sleep (D state,
                          // mostly waiting on I/O), estimated from /proc at each usage sample:
                          // where no PSI is, the stand-in for io pressure
  kCount,
};
constexpr std::size_t kUsageFigures = static_cast<std::size_t>(UsageFigure::kCount);
// The figure's name as a JSON key and store column: "cpu_usage_us", ...
std::string_view UsageFigureName(UsageFigure figure);

struct HostUsage {
  UsageSource source = UsageSource::kNone;
  std::array<int64_t, kUsageFigures> figures;  // -1: not measured
  HostUsage() { figures.fill(-1); }

  int64_t get(UsageFigure f) const { return figures[static_cast<std::size_t>(f)]; }
  void set(UsageFigure f, int64_t value) { figures[static_cast<std::size_t>(f)] = value; }
  bool has(UsageFigure f) const { return get(f) >= 0; }
  bool measured() const { return source != UsageSource::kNone; }
  // The names of the figures its source did not give.
  std::vector<std::string> Missing() const;
};

// A compact text form for storage: the source's name, then each figure in UsageFigure order
// ("cgroup-v1 1200000 20 -1 ..."); "" when unmeasured. Reading accepts fewer figures than there
// are now (a row written before a figure was added: the rest are missing) and never more.
std::string HostUsageToText(const HostUsage& usage);
bool HostUsageFromText(std::string_view text, HostUsage& out);

// The usage of a job from that of its ranks (one per node): counters add up; the memory figures
// are the largest of any one rank (what one node must hold). A figure missing on any measured rank
// is missing in the result; an unmeasured rank (source kNone) is skipped.
HostUsage CombineRanks(const HostUsage& a, const HostUsage& b);

}  // namespace gpufleet::core

// Makes the advisor's labelled suite (src/advise/testdata; docs/advise.md, "The labelled suite").
//
//  1. `--record`: runs six host scenarios as REAL processes, each in its own job cgroup
//     (agent::CgroupLimits, v1 or v2) with real limits, and samples them at 1 Hz with
//     agent::JobUsageMeter, as an agent does: a CPU-bound feeder at its CPU quota, a reader
//     throttled by blkio (O_DIRECT, so every read reaches the disk), a memory hog killed at its
//     memory limit, an idle process, a healthy process and a light one under a large request.
//     The cumulative samples go to testdata/host/<scenario>.txt ("t_ms <HostUsageToText>").
//     Needs root and writable cgroups; cleans its cgroups and processes up, also on SIGINT/TERM.
//  2. `--build` (the default, also after --record): reads those recordings and writes one JSON
//     file per labelled series: GPU samples from step-function timelines with seeded noise (like
//     fake NVML's, per GPU, 1 Hz), host samples replaying a recording (cyclically past its end),
//     both through advise::UsageSeriesBuilder. The label comes from the scenario, never from
//     the advisor.
//  3. `--show`: prints what the advisor says of each series (nothing is written).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "advise/usage_json.h"
#include "advise/usage_series.h"
#include "agent/cgroup_limits.h"
#include "agent/job_usage.h"

namespace {

namespace fs = std::filesystem;
using gpufleet::advise::GpuReading;
using gpufleet::advise::JobFacts;
using gpufleet::advise::JobUsage;
using gpufleet::advise::UsageSeriesBuilder;
using gpufleet::agent::CgroupLimits;
using gpufleet::agent::JobLimits;
using gpufleet::agent::JobUsageMeter;
using gpufleet::core::HostUsage;
using gpufleet::core::UsageFigure;

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

// ---- 1. Host scenarios: real processes in real cgroups ----

const char* const kIoFile = "/var/tmp/gpufleet-advise-suite-io.bin";
constexpr int64_t kIoFileBytes = 128LL << 20;
constexpr int64_t kIoBlock = 256 << 10;
constexpr int64_t kIoReadBps = 4LL << 20;  // the blkio read limit: 4 MB/s

void Spin(std::chrono::microseconds for_us) {
  const auto until = std::chrono::steady_clock::now() + for_us;
  volatile uint64_t x = 1;
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 1000; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  }
}

// Touches `mib` MiB and keeps it.
std::vector<char*> Hold(int mib) {
  std::vector<char*> chunks;
  for (int i = 0; i < mib; ++i) {
    char* c = static_cast<char*>(std::malloc(1 << 20));
    std::memset(c, i & 0xff, 1 << 20);
    chunks.push_back(c);
  }
  return chunks;
}

// A loop busy `duty` of each 100 ms.
[[noreturn]] void DutyCycle(double duty) {
  for (;;) {
    Spin(std::chrono::microseconds(static_cast<int64_t>(duty * 100'000)));
    std::this_thread::sleep_for(
        std::chrono::microseconds(static_cast<int64_t>((1 - duty) * 100'000)));
  }
}

// The workloads, each run in the job's process (never returns).
[[noreturn]] void Feeder() {
  // A data loader decoding and augmenting on two threads, under a half-CPU quota.
  std::thread other([] { DutyCycle(1.0); });
  DutyCycle(1.0);
}

[[noreturn]] void Reader() {
  // Reads a file with O_DIRECT (no page cache: each read reaches the throttled disk) and
  // checksums what it read: the loader of a data set on slow storage.
  const int fd = open(kIoFile, O_RDONLY | O_DIRECT);
  if (fd < 0) _exit(3);
  void* buf = nullptr;
  if (posix_memalign(&buf, 4096, kIoBlock) != 0) _exit(3);
  for (int64_t off = 0;; off = (off + kIoBlock) % kIoFileBytes) {
    if (pread(fd, buf, kIoBlock, off) != kIoBlock) _exit(4);
    Spin(std::chrono::microseconds(2000));
  }
}

[[noreturn]] void OomLoop() {
  // A job whose worker grows its memory (24 MiB/s) until the kernel kills it at the cgroup's
  // limit; the job restarts it, as a DataLoader-based trainer restarting an epoch would.
  for (;;) {
    const pid_t child = fork();
    if (child == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      std::vector<char*> held;
      for (;;) {
        auto more = Hold(8);
        held.insert(held.end(), more.begin(), more.end());
        std::this_thread::sleep_for(std::chrono::milliseconds(333));
      }
    }
    int status = 0;
    waitpid(child, &status, 0);
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
}

[[noreturn]] void Idle() {
  for (;;) pause();
}

[[noreturn]] void Healthy() {
  // A trainer's host side when the GPU sets the pace: 400 MiB held, one thread busy 60%.
  auto held = Hold(400);
  DutyCycle(0.6);
}

[[noreturn]] void Light() {
  auto held = Hold(300);
  DutyCycle(0.1);
}

struct HostScenario {
  const char* name;
  const char* what;
  JobLimits limits;
  void (*work)();
  int phase;  // scenarios of a phase run at the same time
};

const std::vector<HostScenario>& HostScenarios() {
  static const std::vector<HostScenario> s = {
      {"idle",
       "a sleeping process (a notebook kernel between cells); 2 CPUs, 4 GiB",
       {2000, 4096},
       [] { Idle(); },
       0},
      {"light",
       "one thread busy 10%, 300 MiB held, under a request of 8 CPUs and 16 GiB",
       {8000, 16384},
       [] { Light(); },
       0},
      {"io",
       "O_DIRECT 256 KiB reads of a 128 MiB file, blkio-throttled to 4 MB/s; 2 CPUs, 1 GiB",
       {2000, 1024},
       [] { Reader(); },
       0},
      {"feeder",
       "two threads spinning (decode/augment) under a half-CPU quota; 1 GiB",
       {500, 1024},
       [] { Feeder(); },
       1},
      {"healthy",
       "one thread busy 60%, 400 MiB held; 1 CPU, 1 GiB",
       {1000, 1024},
       [] { Healthy(); },
       2},
      {"oom",
       "a worker growing 24 MiB/s until the OOM killer ends it at 384 MiB, restarted "
       "after 2 s; 1 CPU",
       {1000, 384},
       [] { OomLoop(); },
       2},
  };
  return s;
}

// Writes the file and syncs it: an O_DIRECT read of a range with dirty pages would first write
// them back, and charge that writeback to the reader's cgroup.
bool MakeIoFile() {
  const int fd = open(kIoFile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return false;
  std::vector<char> block(1 << 20, 'x');
  bool ok = true;
  for (int64_t i = 0; i < kIoFileBytes >> 20 && ok; ++i) {
    ok = write(fd, block.data(), block.size()) == static_cast<ssize_t>(block.size());
  }
  ok = ok && fsync(fd) == 0;
  close(fd);
  return ok;
}

// Limits reads of the I/O scenario's disk in the job's blkio cgroup (v1) or io.max (v2).
void ThrottleReads(const CgroupLimits& cgroups, int64_t id) {
  struct stat st {};
  if (stat(kIoFile, &st) != 0) return;
  const std::string dev = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  for (const std::string& dir : cgroups.JobDirs(id)) {
    std::ofstream v1(dir + "/blkio.throttle.read_bps_device");
    if (v1) v1 << dev << " " << kIoReadBps << "\n";
    std::ofstream v2(dir + "/io.max");
    if (v2) v2 << dev << " rbps=" << kIoReadBps << "\n";
  }
}

struct Running {
  const HostScenario* s;
  int64_t id;
  pid_t pid;
  std::ofstream out;
};

int Record(const fs::path& host_dir, int seconds) {
  CgroupLimits cgroups = CgroupLimits::Detect("", "advsuite");
  if (!cgroups.available()) {
    std::fprintf(stderr, "record: no usable cgroups: %s\n", cgroups.why_unavailable().c_str());
    return 1;
  }
  fs::create_directories(host_dir);
  if (!MakeIoFile()) {
    std::fprintf(stderr, "record: cannot write %s\n", kIoFile);
    return 1;
  }
  JobUsageMeter meter(cgroups);
  int rc = 0;
  for (int phase = 0; phase < 3 && !g_stop; ++phase) {
    std::vector<Running> running;
    int64_t id = 1 + phase * 10;
    for (const HostScenario& s : HostScenarios()) {
      if (s.phase != phase) continue;
      auto procs = cgroups.Prepare(id, s.limits);
      if (!procs) {
        std::fprintf(stderr, "record: %s: %s\n", s.name, procs.error().c_str());
        rc = 1;
        continue;
      }
      if (std::string(s.name) == "io") ThrottleReads(cgroups, id);
      std::fflush(nullptr);
      const pid_t pid = fork();
      if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        setpgid(0, 0);
        for (const std::string& f : procs.value()) {
          std::ofstream(f) << getpid() << "\n";
        }
        s.work();
        _exit(0);
      }
      setpgid(pid, pid);
      Running r{&s, id, pid, std::ofstream(host_dir / (std::string(s.name) + ".txt"))};
      r.out << "# " << s.name << ": " << s.what << "; cpu_milli " << s.limits.cpu_milli
            << ", memory_mib " << s.limits.memory_mib << "; " << cgroups.Kind()
            << ", sampled at 1 Hz by agent::JobUsageMeter\n";
      running.push_back(std::move(r));
      ++id;
    }
    std::fprintf(stderr, "record: phase %d: %zu scenario(s) for %d s\n", phase, running.size(),
                 seconds);
    const auto start = std::chrono::steady_clock::now();
    for (int t = 0; t <= seconds && !g_stop; ++t) {
      std::this_thread::sleep_until(start + std::chrono::seconds(t));
      for (Running& r : running) {
        const HostUsage u = meter.Sample(r.id, r.pid);
        r.out << t * 1000 << " " << gpufleet::core::HostUsageToText(u) << "\n";
      }
    }
    for (Running& r : running) {
      kill(-r.pid, SIGKILL);
      waitpid(r.pid, nullptr, 0);
      cgroups.Release(r.id, r.pid);
      meter.Forget(r.id);
    }
  }
  for (int i = 0; i < 50 && !cgroups.JobIds().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cgroups.ReleasePending();
  }
  cgroups.RemoveJobsCgroupIfEmpty();
  std::remove(kIoFile);
  if (!cgroups.JobIds().empty()) {
    std::fprintf(stderr, "record: job cgroups left behind\n");
    rc = 1;
  }
  return g_stop ? 130 : rc;
}

// ---- 2. The labelled series ----

struct Recording {
  std::string name, header;
  std::vector<HostUsage> samples;  // one a second
  int64_t cpu_milli = 0, memory_mib = 0;
};

bool IsLevel(std::size_t figure) {
  return figure == static_cast<std::size_t>(UsageFigure::kMemoryCurrentBytes) ||
         figure == static_cast<std::size_t>(UsageFigure::kMemoryPeakBytes);
}

std::map<std::string, Recording> ReadRecordings(const fs::path& host_dir) {
  std::map<std::string, Recording> out;
  for (const HostScenario& s : HostScenarios()) {
    Recording r;
    r.name = s.name;
    r.cpu_milli = s.limits.cpu_milli;
    r.memory_mib = s.limits.memory_mib;
    std::ifstream in(host_dir / (r.name + ".txt"));
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      if (line[0] == '#') {
        r.header = line.substr(2);
        continue;
      }
      const auto space = line.find(' ');
      HostUsage u;
      if (space != std::string::npos &&
          gpufleet::core::HostUsageFromText(line.substr(space + 1), u)) {
        r.samples.push_back(u);
      }
    }
    if (r.samples.size() >= 3) out[r.name] = std::move(r);
  }
  return out;
}

// Replays a recording's per-second deltas from `offset`, cyclically past its end; levels
// (memory) are the recording's own. Switching to another recording carries the counters on.
class HostReplay {
 public:
  HostReplay(const Recording* r, std::size_t offset)
      : rec_(r), at_(offset % (r->samples.size() - 1)) {
    cum_ = r->samples[at_];
  }
  void Switch(const Recording* r) {
    if (r == rec_) return;
    rec_ = r;
    at_ = at_ % (r->samples.size() - 1);
  }
  const HostUsage& Next() {
    at_ = at_ + 1 >= rec_->samples.size() ? 1 : at_ + 1;
    const HostUsage& now = rec_->samples[at_];
    const HostUsage& was = rec_->samples[at_ - 1];
    for (std::size_t f = 0; f < gpufleet::core::kUsageFigures; ++f) {
      if (now.figures[f] < 0) {
        cum_.figures[f] = -1;
      } else if (IsLevel(f)) {
        cum_.figures[f] = now.figures[f];
      } else {
        cum_.figures[f] =
            std::max<int64_t>(0, cum_.figures[f]) +
            std::max<int64_t>(0, now.figures[f] - std::max<int64_t>(0, was.figures[f]));
      }
    }
    cum_.source = now.source;
    return cum_;
  }

 private:
  const Recording* rec_;
  std::size_t at_;
  HostUsage cum_;
};

// From `from_min` on (until the next phase): what every GPU of the job does.
struct Phase {
  int from_min = 0;
  double sm = 88;           // mean SM %
  double saw_period_s = 0;  // >0: SM alternates busy/0 (a starved loop), busy `sm / saw_duty`
  double saw_duty = 1;
  double fb_pct = 70;  // framebuffer used of total
  double pcie_mb_s = 600;
  double power_pct = 70;
  double throttle = 0;         // share of samples with a thermal/power clock-event reason
  const char* host = nullptr;  // a host recording for this phase (default: the series')
};

struct Series {
  std::string file, label, description, host;
  int gpus = 1, nodes = 1, minutes = 60;
  std::vector<Phase> phases;
  std::vector<double> gpu_scale;       // SM factor per GPU (default 1)
  std::vector<int> unused;             // GPUs that run nothing
  double unused_context_mib = 0;       // what an unused GPU holds (a stray CUDA context)
  std::vector<std::string> rank_host;  // host recording per rank (default: `host`)
  uint64_t seed = 1;
};

GpuReading Reading(const Phase& p, int gpu, int64_t s, double scale, bool unused, double context,
                   std::mt19937_64& rng) {
  std::normal_distribution<double> noise(0, 1);
  std::uniform_real_distribution<double> u01(0, 1);
  GpuReading r;
  r.index = gpu;
  r.mem_total_mib = 81'559;
  r.power_limit_w = 700;
  r.has_reasons = true;
  double sm = p.sm * scale;
  if (unused) {
    sm = 0;
  } else if (p.saw_period_s > 0) {
    // NVML's utilization is the busy share of its sample period: the part of this second that
    // falls in a busy burst (the bursts of each GPU shifted a little).
    const double busy = std::min(100.0, sm / p.saw_duty), offset = gpu * 0.37 * p.saw_period_s;
    int in_burst = 0;
    for (int k = 0; k < 20; ++k) {
      const double t = static_cast<double>(s) + (k + 0.5) / 20 + offset;
      in_burst += std::fmod(t, p.saw_period_s) < p.saw_duty * p.saw_period_s ? 1 : 0;
    }
    sm = busy * in_burst / 20;
  }
  if (sm > 0) sm = std::clamp(sm + std::min(4.0, sm / 2) * noise(rng), 0.0, 100.0);
  r.sm_pct = std::round(sm);
  r.membw_pct = std::clamp(sm * 0.45 + 2 * noise(rng), 0.0, 100.0);
  const double fb = unused ? context / r.mem_total_mib * 100 : p.fb_pct;
  r.mem_used_mib = static_cast<int64_t>(
      std::clamp(fb + (unused ? 0 : 0.3 * noise(rng)), 0.0, 100.0) * r.mem_total_mib / 100);
  r.pcie_mb_s = unused ? 0 : std::max(0.0, p.pcie_mb_s * (1 + 0.1 * noise(rng)));
  const double power = unused ? 10 : p.power_pct * (0.5 + 0.5 * sm / std::max(1.0, p.sm));
  r.power_w = std::clamp(power + 3 * noise(rng), 5.0, 100.0) * r.power_limit_w / 100;
  if (sm < 1) r.clock_event_reasons |= 0x1;  // GPU idle (not a throttle reason)
  if (!unused && u01(rng) < p.throttle) r.clock_event_reasons |= (s / 600) % 2 ? 0x20 : 0x4;
  return r;
}

const Phase& PhaseAt(const Series& s, int64_t second) {
  const Phase* at = &s.phases.front();
  for (const Phase& p : s.phases) {
    if (p.from_min * 60 <= second) at = &p;
  }
  return *at;
}

nlohmann::json Build(const Series& s, const std::map<std::string, Recording>& recs) {
  const Recording& main = recs.at(s.host);
  const int per_node = s.gpus / s.nodes;
  UsageSeriesBuilder b(0, main.cpu_milli * s.nodes, main.memory_mib);
  std::mt19937_64 rng(s.seed);
  std::vector<HostReplay> ranks;
  for (int r = 0; r < s.nodes; ++r) {
    const std::string& h = r < static_cast<int>(s.rank_host.size()) ? s.rank_host[r] : s.host;
    ranks.emplace_back(&recs.at(h), static_cast<std::size_t>(7 * r));
  }
  for (int64_t sec = 0; sec < s.minutes * 60LL; ++sec) {
    const Phase& p = PhaseAt(s, sec);
    for (int g = 0; g < s.gpus; ++g) {
      const double scale = g < static_cast<int>(s.gpu_scale.size()) ? s.gpu_scale[g] : 1.0;
      const bool unused = std::find(s.unused.begin(), s.unused.end(), g) != s.unused.end();
      GpuReading r = Reading(p, g % per_node, sec, scale, unused, s.unused_context_mib, rng);
      b.AddGpu("node-" + std::string(1, static_cast<char>('a' + g / per_node)), r, sec * 1000);
    }
    for (int r = 0; r < s.nodes; ++r) {
      if (p.host != nullptr && s.rank_host.empty()) ranks[r].Switch(&recs.at(p.host));
      b.AddHost(r, ranks[r].Next(), sec * 1000);
    }
  }
  JobFacts f;
  f.gpus = s.gpus;
  f.nodes = s.nodes;
  f.cpu_milli = main.cpu_milli * s.nodes;
  f.memory_mib = main.memory_mib * s.nodes;
  f.node_cpu_milli = 32'000;
  f.gpu_model = "H100-80GB";
  f.run_ms = s.minutes * 60'000LL;
  f.ended = true;
  std::string desc = s.description + " Host: " + s.host + " recording (" + main.header + ")";
  std::string per;
  for (std::size_t r = 0; r < s.rank_host.size(); ++r) {
    per += (per.empty() ? "" : ", ") + s.rank_host[r] + " on rank " + std::to_string(r);
  }
  for (const Phase& p : s.phases) {
    if (p.host != nullptr && s.rank_host.empty()) {
      per += (per.empty() ? "" : ", ") + std::string(p.host) + " from minute " +
             std::to_string(p.from_min);
    }
  }
  if (!per.empty()) desc += "; recordings used: " + per;
  if (s.minutes * 60LL > static_cast<int64_t>(main.samples.size())) {
    desc += ", replayed cyclically over the " + std::to_string(s.minutes) + " minutes";
  }
  desc += ". GPUs: " + std::to_string(s.gpus) + " x H100-80GB on " + std::to_string(s.nodes) +
          " node(s), 1 Hz step-function timelines with seeded noise (seed " +
          std::to_string(s.seed) + ").";
  nlohmann::json j;
  j["label"] = s.label;
  j["description"] = desc;
  j["facts"] = nlohmann::json::parse(gpufleet::advise::FactsToJson(f));
  j["usage"] = nlohmann::json::parse(gpufleet::advise::UsageToJson(b.Snapshot()));
  return j;
}

std::vector<Series> AllSeries();  // below

// Prints what the advisor says of each series in `dir` (for reading, not for the labels).
int Show(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    std::ifstream in(f);
    std::stringstream text;
    text << in.rdbuf();
    const auto j = nlohmann::json::parse(text.str());
    auto facts = gpufleet::advise::FactsFromJson(j.at("facts").dump());
    auto usage = gpufleet::advise::UsageFromJson(j.at("usage").dump());
    if (!facts.ok() || !usage.ok()) continue;
    std::printf("== %s (label %s)\n", f.filename().c_str(),
                j.at("label").get<std::string>().c_str());
    for (const auto& finding : gpufleet::advise::Advise(usage.value(), facts.value())) {
      std::printf("  [%s, %s, %.2f GPU-h] %s\n",
                  std::string(gpufleet::advise::FindingKindName(finding.kind)).c_str(),
                  std::string(gpufleet::advise::SeverityName(finding.severity)).c_str(),
                  finding.waste_gpu_h, finding.summary.c_str());
      for (const auto& e : finding.evidence) {
        std::printf("      %s = %.1f %s (minute %lld-%lld)\n", e.figure.c_str(), e.value,
                    e.unit.c_str(), static_cast<long long>(e.from_ms / 60'000),
                    static_cast<long long>(e.to_ms / 60'000));
      }
      for (const auto& a : finding.advice) std::printf("      -> %s\n", a.c_str());
    }
  }
  return 0;
}

int BuildSuite(const fs::path& dir) {
  const auto recs = ReadRecordings(dir / "host");
  if (recs.size() < HostScenarios().size()) {
    std::fprintf(stderr, "build: host recordings missing in %s (run with --record)\n",
                 (dir / "host").c_str());
    return 1;
  }
  int n = 0;
  for (const Series& s : AllSeries()) {
    const nlohmann::json j = Build(s, recs);
    std::ofstream(dir / (s.file + ".json")) << j.dump() << "\n";
    ++n;
  }
  std::fprintf(stderr, "build: %d series in %s\n", n, dir.c_str());
  return 0;
}

// ---- The series: the scenario says the label ----

Series S(std::string file, std::string label, std::string description, std::string host, int gpus,
         int nodes, int minutes, std::vector<Phase> phases, uint64_t seed) {
  Series s;
  s.file = std::move(file);
  s.label = std::move(label);
  s.description = std::move(description);
  s.host = std::move(host);
  s.gpus = gpus;
  s.nodes = nodes;
  s.minutes = minutes;
  s.phases = std::move(phases);
  s.seed = seed;
  return s;
}

Phase P(double sm, double fb = 70, double pcie = 600) {
  Phase p;
  p.sm = sm;
  p.fb_pct = fb;
  p.pcie_mb_s = pcie;
  return p;
}
Phase At(int from_min, Phase p, const char* host = nullptr) {
  p.from_min = from_min;
  p.host = host;
  return p;
}
Phase Saw(double sm, double period, double duty, double fb) {
  Phase p = P(sm, fb, 900);
  p.saw_period_s = period;
  p.saw_duty = duty;
  return p;
}
Phase Hot(double sm, double share, double power) {
  Phase p = P(sm);
  p.throttle = share;
  p.power_pct = power;
  return p;
}

std::vector<Series> AllSeries() {
  std::vector<Series> v;
  // efficient: well-fed GPUs, a calm host; some close to a threshold.
  v.push_back(
      S("efficient_01_resnet_1gpu", "efficient",
        "Fine-tuning a ResNet-50 on one GPU with a fast enough loader: SM ~90%, 70% memory.",
        "healthy", 1, 1, 60, {P(90)}, 101));
  v.push_back(S("efficient_02_ddp_2gpu", "efficient", "DDP on two GPUs, SM ~85%, 60% memory.",
                "healthy", 2, 1, 120, {P(85, 60)}, 102));
  v.push_back(S("efficient_03_ddp_4gpu_long", "efficient",
                "Three hours of DDP on four GPUs, SM ~92%, 85% memory, moderate PCIe.", "healthy",
                4, 1, 180, {P(92, 85, 1500)}, 103));
  v.push_back(S("efficient_04_8gpu_pcie_3000", "efficient",
                "Eight GPUs at SM ~80% with 3 GB/s of PCIe traffic each (below the transfer "
                "threshold; the SM is good anyway).",
                "healthy", 8, 1, 90, {P(80, 75, 3000)}, 104));
  v.push_back(S("efficient_05_near_good_sm", "efficient",
                "One GPU at SM ~74%, just above the 70% good level, 45% memory.", "healthy", 1, 1,
                20, {P(74, 45)}, 105));
  v.push_back(S("efficient_06_startup_9min", "efficient",
                "Two GPUs idle for 9 minutes while the data set loads (below the 10-minute idle "
                "threshold), then SM ~88%.",
                "healthy", 2, 1, 45, {P(0, 0, 0), At(9, P(88))}, 106));
  v.push_back(S(
      "efficient_07_throttled_12pct", "efficient",
      "Four GPUs at SM ~82% with a power cap hit in 12% of samples (below the 20% throttle share).",
      "healthy", 4, 1, 60, {Hot(82, 0.12, 92)}, 107));
  {
    Series s = S("efficient_08_2nodes_near_balanced", "efficient",
                 "Two nodes of four GPUs; node-b runs 10% below node-a (78% against 86%), within "
                 "the imbalance ratio.",
                 "healthy", 8, 2, 120, {P(86)}, 108);
    s.gpu_scale = {1, 1, 1, 1, 0.9, 0.9, 0.9, 0.9};
    v.push_back(s);
  }
  v.push_back(S("efficient_09_fb_33pct", "efficient",
                "One GPU at SM ~78% using 33% of its memory (just above the small-batch 30%).",
                "healthy", 1, 1, 30, {P(78, 33)}, 109));
  {
    std::vector<Phase> ph;
    for (int m = 0; m < 150; m += 30)
      ph.push_back(At(m, P(84, 60))), ph.push_back(At(m + 26, P(30, 60)));
    v.push_back(S(
        "efficient_10_eval_dips", "efficient",
        "Two GPUs training at SM ~84% with a 4-minute evaluation pass at SM ~30% every 30 minutes.",
        "healthy", 2, 1, 150, ph, 110));
  }
  // idle: every allocated GPU at ~0% for a long stretch.
  v.push_back(
      S("idle_01_notebook", "idle",
        "A notebook on one GPU: 10 minutes of cells at SM ~60%, then left open for 110 minutes.",
        "idle", 1, 1, 120, {At(0, P(60, 40), "healthy"), At(10, P(0, 40, 0), "idle")}, 201));
  v.push_back(S("idle_02_finished_then_held", "idle",
                "Training on two GPUs for 40 minutes, then the script finished but the job stayed "
                "(a `sleep infinity` left in the batch script) for 140 minutes.",
                "idle", 2, 1, 180, {At(0, P(88), "healthy"), At(40, P(0, 0, 0), "idle")}, 202));
  v.push_back(S("idle_03_waiting_14min", "idle",
                "Four GPUs wait 14 minutes mid-job for a CPU-side preprocessing step of another "
                "job (just above the 10-minute threshold), SM ~88% otherwise.",
                "healthy", 4, 1, 40, {P(88), At(12, P(0, 70, 0), "idle"), At(26, P(88), "healthy")},
                203));
  v.push_back(S("idle_04_rendezvous_8gpu", "idle",
                "Eight GPUs allocated while rank 0 waits for a rendezvous that never comes: "
                "nothing runs for an hour.",
                "idle", 8, 1, 60, {P(0, 0, 0)}, 204));
  {
    Phase p = P(1, 1, 5);
    v.push_back(S("idle_05_monitoring_blips", "idle",
                  "One GPU idle for 25 minutes but for a monitoring query that reads SM ~1% (just "
                  "under the 2% idle level).",
                  "idle", 1, 1, 25, {p}, 205));
  }
  // unused_gpus: k GPUs asked, m < k used.
  auto unused = [&](std::string file, std::string desc, int gpus, int nodes, int minutes,
                    std::vector<int> idle_gpus, double sm, uint64_t seed, double context = 0,
                    std::vector<std::string> rank_host = {}) {
    Series s = S(std::move(file), "unused_gpus", std::move(desc), "healthy", gpus, nodes, minutes,
                 {P(sm, 60)}, seed);
    s.unused = std::move(idle_gpus);
    s.unused_context_mib = context;
    s.rank_host = std::move(rank_host);
    v.push_back(s);
  };
  unused("unused_gpus_01_script_on_4",
         "A single-process script on a 4-GPU allocation: GPU 0 at SM ~90%, GPUs 1-3 untouched.", 4,
         1, 60, {1, 2, 3}, 90, 301);
  unused("unused_gpus_02_script_on_8",
         "A single-process script on 8 GPUs for two hours: only GPU 0 works.", 8, 1, 120,
         {1, 2, 3, 4, 5, 6, 7}, 85, 302);
  unused("unused_gpus_03_second_node_unused",
         "Two nodes asked, torchrun started on the first only: node-b's four GPUs never used (rank "
         "1's host replays the idle recording).",
         8, 2, 90, {4, 5, 6, 7}, 88, 303, 0, {"healthy", "idle"});
  unused("unused_gpus_04_one_of_two", "A script on two GPUs that never moves the model off cuda:0.",
         2, 1, 30, {1}, 70, 304);
  unused("unused_gpus_05_nproc_3_of_4",
         "DDP with --nproc_per_node=3 on 4 GPUs: GPU 3 holds only a stray 600 MiB CUDA context.", 4,
         1, 90, {3}, 87, 305, 600);
  // input_bound_cpu: saw-toothed SM while the CPU is at its quota (the feeder recording).
  v.push_back(S("input_bound_cpu_01_jpeg_decode", "input_bound_cpu",
                "One GPU waiting on JPEG decoding and augmentation in a CPU-bound DataLoader: busy "
                "bursts every 4 s, SM ~30%.",
                "feeder", 1, 1, 60, {Saw(30, 4, 0.35, 55)}, 401));
  v.push_back(
      S("input_bound_cpu_02_ddp_2gpu", "input_bound_cpu",
        "DDP on two GPUs with too few loader workers for its augmentation: SM ~45% in bursts.",
        "feeder", 2, 1, 120, {Saw(45, 3, 0.5, 60)}, 402));
  v.push_back(S("input_bound_cpu_03_4gpu_starved", "input_bound_cpu",
                "Four GPUs fed by one CPU's worth of loader: SM ~20%.", "feeder", 4, 1, 90,
                {Saw(20, 5, 0.25, 40)}, 403));
  v.push_back(S("input_bound_cpu_04_near_good", "input_bound_cpu",
                "One GPU just starved by a CPU-bound loader: SM ~58% (the good level is 70%).",
                "feeder", 1, 1, 30, {Saw(58, 5, 0.8, 70)}, 404));
  v.push_back(S("input_bound_cpu_05_2nodes", "input_bound_cpu",
                "Two nodes of four GPUs, each rank's loader at its CPU quota: SM ~35%.", "feeder",
                8, 2, 60, {Saw(35, 4, 0.4, 55)}, 405));
  // input_bound_io: low SM while reads stall (the blkio-throttled reader).
  v.push_back(S("input_bound_io_01_nfs_images", "input_bound_io",
                "One GPU reading small image files from slow network storage: SM ~15% in bursts.",
                "io", 1, 1, 60, {Saw(15, 8, 0.2, 40)}, 501));
  v.push_back(S("input_bound_io_02_2gpu", "input_bound_io",
                "Two GPUs whose loader waits on disk reads: SM ~30%.", "io", 2, 1, 90,
                {Saw(30, 5, 0.35, 50)}, 502));
  v.push_back(
      S("input_bound_io_03_4gpu_long", "input_bound_io",
        "Four GPUs for three hours on a data set that does not fit the page cache: SM ~10%.", "io",
        4, 1, 180, {Saw(10, 10, 0.12, 50)}, 503));
  v.push_back(S("input_bound_io_04_2nodes", "input_bound_io",
                "Two nodes of four GPUs reading shards from one slow file server: SM ~25%.", "io",
                8, 2, 45, {Saw(25, 6, 0.3, 45)}, 504));
  v.push_back(S("input_bound_io_05_near_good", "input_bound_io",
                "One GPU mildly starved by reads: SM ~55%.", "io", 1, 1, 20, {Saw(55, 3, 0.65, 60)},
                505));
  // transfer_bound: heavy PCIe with low SM.
  v.push_back(S("transfer_bound_01_cpu_tensors", "transfer_bound",
                "A model whose activations go back to the CPU each step (`.cpu()` in the loop): 12 "
                "GB/s of PCIe, SM ~30%.",
                "healthy", 1, 1, 60, {P(30, 50, 12000)}, 601));
  v.push_back(S("transfer_bound_02_offload", "transfer_bound",
                "Two GPUs with optimizer state offloaded to the host: 8 GB/s each, SM ~45%.",
                "healthy", 2, 1, 120, {P(45, 40, 8000)}, 602));
  v.push_back(S("transfer_bound_03_pageable_copies", "transfer_bound",
                "Four GPUs copying large unpinned batches each step: 20 GB/s, SM ~20%.", "healthy",
                4, 1, 40, {P(20, 35, 20000)}, 603));
  v.push_back(S("transfer_bound_04_near", "transfer_bound",
                "Eight GPUs at SM ~55% with 5 GB/s of PCIe each (just above the 4 GB/s threshold).",
                "healthy", 8, 1, 90, {P(55, 60, 5000)}, 604));
  // under_batched: moderate SM, little memory, calm host.
  v.push_back(S("under_batched_01_bs16", "under_batched",
                "A small CNN at batch size 16 on one GPU: SM ~40%, 10% of memory.", "healthy", 1, 1,
                60, {P(40, 10)}, 701));
  v.push_back(S("under_batched_02_2gpu", "under_batched",
                "DDP on two GPUs with a per-GPU batch of 8: SM ~55%, 20% memory.", "healthy", 2, 1,
                90, {P(55, 20)}, 702));
  v.push_back(S("under_batched_03_4gpu_long", "under_batched",
                "Four GPUs for 150 minutes on a tiny transformer: SM ~30%, 15% memory.", "healthy",
                4, 1, 150, {P(30, 15)}, 703));
  v.push_back(S("under_batched_04_near", "under_batched",
                "Eight GPUs at SM ~62% using 27% of memory (both just inside the thresholds).",
                "healthy", 8, 1, 60, {P(62, 27)}, 704));
  v.push_back(S("under_batched_05_mlp", "under_batched",
                "A tabular MLP on one GPU: SM ~25%, 6% of memory.", "healthy", 1, 1, 25, {P(25, 6)},
                705));
  // memory_bound: OOM kills at the host limit, or a full GPU with low SM.
  v.push_back(S("memory_bound_01_worker_oom", "memory_bound",
                "One GPU training well (SM ~80%) while DataLoader workers copying the data set are "
                "killed at the host memory limit.",
                "oom", 1, 1, 60, {P(80, 60)}, 801));
  v.push_back(S("memory_bound_02_oom_2gpu", "memory_bound",
                "Two GPUs, host-side OOM kills of a growing worker.", "oom", 2, 1, 90, {P(75, 65)},
                802));
  v.push_back(S("memory_bound_03_oom_4gpu", "memory_bound",
                "Four GPUs, short job, OOM kills on the host.", "oom", 4, 1, 30, {P(85, 70)}, 803));
  v.push_back(
      S("memory_bound_04_fb_full", "memory_bound",
        "A model that fills its GPU (98%): the allocator frees and retries every step, SM ~35%.",
        "healthy", 1, 1, 120, {P(35, 98)}, 804));
  v.push_back(S("memory_bound_05_fb_96", "memory_bound",
                "Two GPUs at 96% memory (just above 95%) with SM ~50%.", "healthy", 2, 1, 45,
                {P(50, 96)}, 805));
  // throttled: thermal/power clock-event reasons, a node problem.
  v.push_back(S("throttled_01_power_cap", "throttled",
                "Four GPUs at SM ~90% on a node whose power cap bites in 60% of samples.",
                "healthy", 4, 1, 120, {Hot(90, 0.6, 99)}, 901));
  v.push_back(S("throttled_02_thermal_8gpu", "throttled",
                "Eight GPUs in a hot chassis (failed fan): thermal slowdown in 30% of samples.",
                "healthy", 8, 1, 60, {Hot(88, 0.3, 85)}, 902));
  v.push_back(S("throttled_03_always", "throttled",
                "One GPU with HW slowdown all the time for three hours.", "healthy", 1, 1, 180,
                {Hot(92, 1.0, 60)}, 903));
  v.push_back(S("throttled_04_near", "throttled",
                "Two GPUs throttled in 25% of samples (just above the 20% share).", "healthy", 2, 1,
                30, {Hot(89, 0.25, 97)}, 904));
  // imbalance: one node or GPU below the rest.
  auto imbalance = [&](std::string file, std::string desc, int gpus, int nodes, int minutes,
                       std::vector<double> scale, uint64_t seed) {
    Series s = S(std::move(file), "imbalance", std::move(desc), "healthy", gpus, nodes, minutes,
                 {P(88)}, seed);
    s.gpu_scale = std::move(scale);
    v.push_back(s);
  };
  imbalance(
      "imbalance_01_slow_node",
      "Two nodes of four GPUs; node-b's local disk is slow, its GPUs run at 55% of node-a's SM.", 8,
      2, 120, {1, 1, 1, 1, 0.55, 0.55, 0.55, 0.55}, 1001);
  imbalance("imbalance_02_4nodes", "Four nodes of two GPUs; node-c lags at 60% of the others' SM.",
            8, 4, 60, {1, 1, 1, 1, 0.6, 0.6, 1, 1}, 1002);
  imbalance("imbalance_03_data_skew_gpu5",
            "One node of eight GPUs; rank 5 gets a shard half the size: GPU 5 at 50% of the rest.",
            8, 1, 90, {1, 1, 1, 1, 1, 0.5, 1, 1}, 1003);
  imbalance("imbalance_04_near",
            "Two nodes of two GPUs; node-b at 75% of node-a (just under the 0.8 ratio).", 4, 2, 45,
            {1, 1, 0.75, 0.75}, 1004);
  // over_requested_host: good GPU use, host asked far above use (the light recording).
  v.push_back(S("over_requested_host_01", "over_requested_host",
                "One GPU well used (SM ~88%) by a job that asked 8 CPUs and 16 GiB and used a "
                "tenth of a CPU and 300 MiB.",
                "light", 1, 1, 60, {P(88)}, 1101));
  v.push_back(S("over_requested_host_02", "over_requested_host",
                "Two GPUs well used; 8 CPUs and 16 GiB asked, almost none used.", "light", 2, 1,
                120, {P(85)}, 1102));
  v.push_back(S("over_requested_host_03", "over_requested_host",
                "Four GPUs at SM ~90% for 30 minutes; host request far above use.", "light", 4, 1,
                30, {P(90, 80)}, 1103));
  v.push_back(S("over_requested_host_04", "over_requested_host",
                "One GPU at SM ~80% for three hours; host request far above use.", "light", 1, 1,
                180, {P(80, 60)}, 1104));
  // Two problems at once: the label is the one the scenario makes costlier in GPU time.
  unused("unused_gpus_06_and_small_batch",
         "A script on 4 GPUs using one, and that one with a small batch (SM ~45%, 15% memory): "
         "three idle GPUs cost more than the small batch.",
         4, 1, 60, {1, 2, 3}, 45, 306);
  v.back().phases = {P(45, 15)};
  v.push_back(
      S("idle_06_notebook_on_4gpus", "idle",
        "A notebook on four GPUs that used one for 15 minutes, then sat open for 100 minutes.",
        "idle", 4, 1, 115, {At(0, P(70, 40), "healthy"), At(15, P(0, 40, 0), "idle")}, 206));
  v.back().unused = {1, 2, 3};
  v.push_back(S("throttled_05_and_over_requested", "throttled",
                "Two GPUs power-capped in 50% of samples, in a job that also asked 8 CPUs and 16 "
                "GiB it does not use (no GPU time lost to that).",
                "light", 2, 1, 60, {Hot(90, 0.5, 99)}, 905));
  v.push_back(S("input_bound_cpu_06_small_memory", "input_bound_cpu",
                "A CPU-bound loader feeding a model that uses 15% of GPU memory: a larger batch "
                "would not help while the CPU cannot keep up.",
                "feeder", 1, 1, 60, {Saw(30, 4, 0.35, 15)}, 406));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path dir = fs::path(GPUFLEET_SOURCE_DIR) / "src/advise/testdata";
  bool record = false, show = false;
  int seconds = 90;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--record") {
      record = true;
    } else if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atoi(argv[++i]);
    } else if (a == "--show") {
      show = true;
    } else if (a == "--out" && i + 1 < argc) {
      dir = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--record [--seconds N]] [--show] [--out DIR]\n", argv[0]);
      return 2;
    }
  }
  if (show) return Show(dir);
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  if (record) {
    if (const int rc = Record(dir / "host", seconds); rc != 0) return rc;
  }
  return BuildSuite(dir);
}

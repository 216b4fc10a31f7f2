// Issue 13, "Must show", end to end: jobs submitted to `gpufleet up` on the fake NVML, one per
// finding kind, get the right top finding from `gpufleet advise JOB --json`.
//
// One `up` on a fake-NVML machine of 12 H100s. Each GPU's timeline is made for the kind of the job
// that lands on it (jobs take the lowest free whole GPUs, so they are submitted one by one and
// each one's GPUs checked before relying on them). The GPU-side kinds come from the timelines
// alone (the job is a `sleep`); the host-side kinds run a real process in the job's cgroup beside
// a GPU at low SM: threads spinning under `--cpus 0.5` (input_bound_cpu), a memory hog under
// `--memory 64M` (memory_bound through an OOM kill), O_DIRECT reads throttled by the job's blkio
// cgroup (input_bound_io, cgroup v1). The jobs run together for about 3 minutes (findings are
// made of one-minute buckets); then each job's top finding is read live, and again from the store
// once they are cancelled.
//
// Not covered here: `idle` needs 10 idle minutes (AdviseOptions::idle_min_ms; IdleServer in
// up_e2e_test and the labelled suite cover it) and `over_requested_host` 20 minutes of a job's
// life (AdviseOptions::over_min_run_ms; the labelled suite covers it).
//
// GPUFLEET_ADVISE_E2E_RUN_S=N shortens (or lengthens) the 180 s run, for working on the test.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "advise/usage_series.h"
#include "e2e_process.h"
#include "e2e_up_server.h"

namespace gpufleet {
namespace {

using nlohmann::json;

constexpr int kGpus = 12;
constexpr int64_t kMemTotalMib = 81559;  // an H100 80GB as NVML reports it
constexpr int64_t kPowerLimitW = 700;

// One fake-NVML GPU: its constant levels (a one-step timeline).
struct GpuLevels {
  int sm = 0;     // gpu_util, %
  int membw = 0;  // mem_util, %
  int64_t mem_mib = 0;
  int power_w = 100;
  uint64_t reasons = 0;  // clocks_event_reasons
  int64_t pcie_tx_kbps = 0, pcie_rx_kbps = 0;
};

// nvmlClocksEventReasonSwPowerCap: the GPU held at its power limit. Not a thermal reason: the
// agent's health check drains a GPU in thermal slowdown and stops its jobs (gpu/health.cpp), so a
// job on one would not run long enough to be advised.
constexpr uint64_t kThrottleReasons = 0x4;
static_assert((kThrottleReasons & advise::kThrottleReasonsMask) == kThrottleReasons);

// Levels picked well inside each kind's region of AdviseOptions (docs/advise.md, "The rules and
// their thresholds"); "starved" is mean SM over the used GPUs < good_sm_pct (70%).
constexpr int64_t kMemHalf = 40'000;  // 49%: neither small (< 30%) nor full (>= 95%)
// A busy, well-fed GPU: 92% SM, 74% memory, little PCIe.
constexpr GpuLevels kBusy{92, 45, 60'000, 600, 0, 150'000, 150'000};
// A starved GPU with nothing on the GPU side to explain it (a host cause must).
constexpr GpuLevels kStarved{30, 10, kMemHalf, 250, 0, 100'000, 100'000};
const GpuLevels kLevels[kGpus] = {
    kBusy,  // 0 efficient
    // 1 transfer_bound: 5 + 5 GB/s of PCIe (10,240 MB/s per GPU; the rule is >= 4,000) at 30% SM.
    {30, 10, kMemHalf, 250, 0, 5'000'000, 5'000'000},
    // 2 under_batched: 40% SM with 8 GB of 80 (10%; the rule is < 30%), no host pressure.
    {40, 15, 8'000, 300, 0, 100'000, 100'000},
    // 3 memory_bound (GPU): 80.5 GB of 81.6 (98.7%; the rule is >= 95%) at 30% SM.
    {30, 60, 80'500, 250, 0, 100'000, 100'000},
    // 4 throttled: busy at 690 W of 700, capped by power in every sample (the rule: >= 20%).
    {92, 45, 60'000, 690, kThrottleReasons, 150'000, 150'000},
    // 5, 6 imbalance: 95% and 50% SM (50 < 0.8 x 95 and 45 points under it; the mean, 72.5%, is
    // not starved, so nothing else fires).
    {95, 45, 50'000, 620, 0, 150'000, 150'000},
    {50, 25, 50'000, 350, 0, 150'000, 150'000},
    // 7, 8 unused_gpus: one busy GPU, one at 0% holding no memory (the rule: < 1 GiB, < 1% busy).
    kBusy,
    {0, 0, 0, 60, 0, 0, 0},
    kStarved,  // 9 input_bound_cpu: the host side says why
    kBusy,     // 10 memory_bound by an OOM kill: the GPU is fine
    kStarved,  // 11 input_bound_io: the host side says why
};

std::string ScenarioJson() {
  json gpus = json::array();
  for (const GpuLevels& l : kLevels) {
    const json step = {{"t", 0},
                       {"gpu_util", l.sm},
                       {"mem_util", l.membw},
                       {"memory_used_mib", l.mem_mib},
                       {"power_w", l.power_w},
                       {"clocks_event_reasons", l.reasons},
                       {"pcie_tx_kbps", l.pcie_tx_kbps},
                       {"pcie_rx_kbps", l.pcie_rx_kbps}};
    json gpu = json::object();
    gpu["name"] = "NVIDIA H100 80GB HBM3";
    gpu["memory_total_mib"] = kMemTotalMib;
    gpu["power_limit_w"] = kPowerLimitW;
    gpu["timeline"] = json::array({step});
    gpus.push_back(std::move(gpu));
  }
  json scenario = json::object();
  scenario["gpus"] = std::move(gpus);
  return scenario.dump(2);
}

// What `advise --json` said of a job: its top finding, and the rest by kind.
struct Advice {
  std::string kind = "(none)";  // the top finding's
  std::string summary;          // the top finding's, or the answer when there is none
  std::string evidence;         // the top finding's, "figure=value ..."
  std::string others;           // the other findings' kinds, worst first
};

Advice AdviceOf(const json& advice) {
  Advice out;
  if (!advice.contains("findings") || !advice["findings"].is_array() ||
      advice["findings"].empty()) {
    out.summary = advice.dump();
    return out;
  }
  const json& findings = advice["findings"];
  out.kind = findings[0].value("kind", "?");
  out.summary = findings[0].value("summary", "");
  for (const json& e : findings[0].value("evidence", json::array())) {
    char value[32];
    std::snprintf(value, sizeof value, "%.1f", e.value("value", 0.0));
    out.evidence +=
        (out.evidence.empty() ? "" : " ") + e.value("figure", std::string("?")) + "=" + value;
  }
  for (std::size_t i = 1; i < findings.size(); ++i) {
    out.others += (out.others.empty() ? "" : ",") + findings[i].value("kind", std::string("?"));
  }
  return out;
}

// One job and the finding it is made for.
struct Case {
  Case(std::string kind_, std::vector<int> gpus_, std::string submit_, bool host_side_ = false)
      : kind(std::move(kind_)),
        gpus(std::move(gpus_)),
        submit(std::move(submit_)),
        host_side(host_side_) {}
  std::string kind;       // the top finding expected
  std::vector<int> gpus;  // the GPUs whose timelines were made for it
  std::string submit;     // `gpufleet submit --json` arguments
  bool host_side;         // needs a job cgroup (limits and measures the real process)
  int64_t id = 0;
  std::string skipped;  // why the row was left out, when it was
  Advice live, ended;   // what advise said, live and from the store
  std::string usage;    // the live series, shown when the finding is not the one expected
};

// The blkio cgroup directory of process `pid` (cgroup v1), or "" when it has none.
std::string BlkioCgroupOf(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    // "5:blkio:/path" (controllers may share a hierarchy: "5:blkio,io:/path").
    const std::size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::stringstream controllers(line.substr(a + 1, b - a - 1));
    for (std::string c; std::getline(controllers, c, ',');) {
      if (c == "blkio") return "/sys/fs/cgroup/blkio" + line.substr(b + 1);
    }
  }
  return "";
}

// "MAJ:MIN" of the whole disk holding `path` (a throttle rule takes a disk, not a partition).
std::string DiskOf(const std::filesystem::path& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return "";
  std::string dev = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  const std::filesystem::path sys = "/sys/dev/block/" + dev;
  if (std::filesystem::exists(sys / "partition")) {
    dev = e2e::FirstLine((std::filesystem::canonical(sys).parent_path() / "dev").string());
  }
  return dev;
}

class AdviseServer : public e2e::FakeNvmlUpServer {
 protected:
  std::string Scenario() const override { return ScenarioJson(); }
};

TEST_F(AdviseServer, EachJobGetsTheTopFindingItsGpuAndProcessWereMadeFor) {
  // The machine as the scenario made it (once its agent has reported).
  json nodes;
  e2e::WaitUntil(
      [&] {
        nodes = json::parse(Cli("nodes --json"));
        return nodes.size() == 1 && nodes[0].value("gpus", 0) == kGpus;
      },
      10);
  ASSERT_EQ(nodes.size(), 1u) << nodes.dump();
  ASSERT_EQ(nodes[0]["gpus"], kGpus) << nodes.dump();
  EXPECT_NE(nodes[0]["gpu_model"].get<std::string>().find("H100"), std::string::npos)
      << nodes.dump();
  const std::string limits = nodes[0].value("limits", "none");
  const bool cgroups = limits != "none";

  const std::string io_file = (dir_ / "io-data.bin").string();
  const std::string io_pid = (dir_ / "io-reader.pid").string();
  const std::string io_go = (dir_ / "io-go").string();
  std::vector<Case> cases = {
      {"efficient", {0}, "-- sleep 900"},
      {"transfer_bound", {1}, "-- sleep 900"},
      {"under_batched", {2}, "-- sleep 900"},
      {"memory_bound", {3}, "--name gpu-memory-full -- sleep 900"},
      {"throttled", {4}, "-- sleep 900"},
      {"imbalance", {5, 6}, "--gpus 2 -- sleep 900"},
      {"unused_gpus", {7, 8}, "--gpus 2 -- sleep 900"},
      // A loader's decode threads: three spinning under half a core.
      {"input_bound_cpu",
       {9},
       "--cpus 0.5 -- sh -c 'for i in 1 2 3; do (while :; do :; done) & done; wait'",
       true},
      // A worker outgrowing its 64 MiB until the OOM killer ends it, restarted 2 s later; the
      // loop (the job's main process) stays small and lives on.
      {"memory_bound",
       {10},
       "--memory 64M --name oom -- sh -c 'while :; do tail /dev/zero; sleep 2; done'",
       true},
      // A loader reading a file with O_DIRECT once the test has throttled its blkio cgroup.
      {"input_bound_io",
       {11},
       "-- sh -c 'echo $$ > " + io_pid + "; while [ ! -e " + io_go +
           " ]; do sleep 0.1; done; while :; do dd if=" + io_file +
           " of=/dev/null bs=256k iflag=direct 2>/dev/null; done'",
       true},
  };
  if (!cgroups) {
    for (Case& c : cases) {
      if (c.host_side) {
        c.skipped = "no usable cgroup v1 or v2 hierarchy here (" +
                    nodes[0].value("limits_why", std::string("?")) +
                    "): a job's CPU, memory and I/O can be neither limited nor measured";
      }
    }
  }
  {
    // 64 MiB to read, on disk before the reader starts.
    std::ofstream out(io_file, std::ios::binary);
    const std::string block(1 << 20, 'x');
    for (int i = 0; i < 64; ++i) out << block;
  }
  e2e::Sh("sync");
  if (const int fd = open(io_file.c_str(), O_RDONLY | O_DIRECT); fd >= 0) {
    close(fd);
  } else {
    for (Case& c : cases) {
      if (c.kind == "input_bound_io" && c.skipped.empty()) {
        c.skipped = "the file system of " + io_file + " takes no O_DIRECT reads (" +
                    std::strerror(errno) + "): the reader would read from the page cache";
      }
    }
  }

  // Submitted one by one: each takes the lowest free GPUs, which must be the ones made for it.
  for (Case& c : cases) {
    if (!c.skipped.empty()) continue;
    const json submitted = json::parse(Cli("submit --json " + c.submit));
    ASSERT_TRUE(submitted.contains("id")) << c.kind << ": " << submitted.dump();
    c.id = submitted["id"].get<int64_t>();
    const json running = WaitFor(c.id, "RUNNING");
    ASSERT_EQ(running["gpu_indices"], json(c.gpus)) << c.kind << ": " << running.dump();
  }
  // The I/O job: a throttle of 4 MB/s on the disk holding its file, in its own blkio cgroup (as
  // an admin's io limit, or a slow network file system, would hold it), then it may read.
  for (Case& c : cases) {
    if (c.kind != "input_bound_io" || !c.skipped.empty()) continue;
    ASSERT_TRUE(e2e::WaitUntil([&] { return !e2e::FirstLine(io_pid).empty(); }, 10));
    const std::string blkio = BlkioCgroupOf(e2e::FirstLine(io_pid));
    const std::string disk = DiskOf(io_file);
    const std::string rule = disk + " 4000000";
    std::ofstream throttle(blkio + "/blkio.throttle.read_bps_device");
    throttle << rule << std::flush;
    if (blkio.empty() || disk.empty() || !throttle) {
      c.skipped = "cannot throttle the reader's reads (blkio cgroup '" + blkio + "', rule '" +
                  rule + "'; needs cgroup v1 blkio): unthrottled O_DIRECT reads on this disk " +
                  "stall in D state only part of the time, not reliably";
      Cli("cancel " + std::to_string(c.id));
    }
    std::ofstream(io_go) << "go\n";
  }

  // Long enough for three whole one-minute buckets of the last job started.
  const char* run_env = std::getenv("GPUFLEET_ADVISE_E2E_RUN_S");
  const int run_s = run_env != nullptr ? std::atoi(run_env) : 180;
  std::this_thread::sleep_for(std::chrono::seconds(run_s));

  for (Case& c : cases) {
    if (!c.skipped.empty()) continue;
    const json advice = json::parse(Cli("advise --json " + std::to_string(c.id)));
    c.live = AdviceOf(advice);
    // The figures the advisor read are the scenario's GPUs: their index and memory.
    const json usage =
        json::parse(Http(token_).Get("/v1/jobs/" + std::to_string(c.id) + "/usage")->body);
    ASSERT_EQ(usage["gpus"].size(), c.gpus.size()) << c.kind << ": " << usage.dump();
    for (std::size_t i = 0; i < c.gpus.size(); ++i) {
      EXPECT_EQ(usage["gpus"][i]["index"], c.gpus[i]) << c.kind;
      EXPECT_EQ(usage["gpus"][i]["mem_total_mib"], kMemTotalMib) << c.kind;
    }
    c.usage = usage.dump();
  }
  // Ended, the series and findings come from the store (quantized to a byte a figure).
  for (Case& c : cases) {
    if (c.id > 0) Cli("cancel " + std::to_string(c.id));
  }
  for (Case& c : cases) {
    if (!c.skipped.empty()) continue;
    WaitFor(c.id, "CANCELLED", 30);
    c.ended = AdviceOf(json::parse(Cli("advise --json " + std::to_string(c.id))));
  }

  std::printf("\n%-16s %4s %-6s %-16s %-16s %s\n", "EXPECTED", "JOB", "GPUS", "GOT (LIVE)",
              "GOT (ENDED)", "TOP FINDING (LIVE), ITS EVIDENCE, THE OTHER FINDINGS");
  for (const Case& c : cases) {
    std::string gpus;
    for (int g : c.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
    if (!c.skipped.empty()) {
      std::printf("%-16s %4s %-6s skipped: %s\n", c.kind.c_str(), "-", gpus.c_str(),
                  c.skipped.c_str());
      continue;
    }
    std::printf("%-16s %4lld %-6s %-16s %-16s %s\n%47s %s\n%47s others: %s\n", c.kind.c_str(),
                static_cast<long long>(c.id), gpus.c_str(), c.live.kind.c_str(),
                c.ended.kind.c_str(), c.live.summary.c_str(), "", c.live.evidence.c_str(), "",
                c.live.others.empty() ? "none" : c.live.others.c_str());
  }
  std::fflush(stdout);
  for (const Case& c : cases) {
    if (!c.skipped.empty()) continue;
    EXPECT_EQ(c.live.kind, c.kind)
        << "job " << c.id << ": " << c.live.summary << "\nits series: " << c.usage;
    EXPECT_EQ(c.ended.kind, c.kind) << "job " << c.id << " once ended: " << c.ended.summary;
  }
}

}  // namespace
}  // namespace gpufleet

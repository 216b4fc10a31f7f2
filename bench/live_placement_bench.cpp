// Fragmentation-aware placement, live (issue 12, section 5): the openb placement experiment
// replayed through the live `Controller` on simulated remote nodes, beside the simulator's
// figure for the same arrival order.
//
// Every openb node registers with a Controller (no local node, an SQLite store in a temporary
// directory) through `Heartbeat`, with its GPU count, GPU model, CPU and memory; nodes register in
// the order's tie-break rank, so that the controller's node index is the simulator's rank. The
// pods are then submitted in the order's arrival order, one at a time, each followed by one pass
// (`RunOnce`): a pod the pass could not place is cancelled, which is the experiment's "a failed
// pod is dropped". The fake clock never moves, so no lease expires and nothing ends: pods never
// leave. At the end every node heartbeats once more and the reply (what the node is told to run)
// is what is counted: GPU milli allocated per GPU, CPU and memory per node (checked against the
// node's capacity), and each pod's node and GPUs (compared with the simulator's, pod by pod).
//
// Two live variants per policy: the controller given the simulator's workload profile
// (`ControllerOptions::workload_profile`: the parity check, expected to equal the simulator), and
// the controller learning it from the jobs as they arrive (the default live behaviour).
//
// Usage: live_placement_bench [--traces DIR] [--pods FILE] [--seeds 42,43] [--policies a,b]
//                             [--modes given,learnt] [--tune 1.3] [--synthetic NODES] [--check]
// Prints one CSV line per (pods, seed, policy) on stdout. Exits 0 with a "skipped:" line when the
// traces are absent. `--synthetic NODES`: a generated openb-like workload of about NODES nodes
// instead of the trace (sim/synthetic_openb.h), with generated orders; `--check`: exit 1 unless
// the controller given the profile placed every pod as the simulator did, within capacity (a
// ctest runs it on a synthetic workload).
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "controller/controller.h"
#include "core/gpu_catalog.h"
#include "core/rng.h"
#include "sched/policy_registry.h"
#include "sim/openb_trace.h"
#include "sim/placement_experiment.h"
#include "sim/placement_report.h"
#include "sim/synthetic_openb.h"
#include "store/store.h"

namespace {

using namespace gpufleet;

constexpr int64_t kNowMs = 1'700'000'000'000;  // the fake clock: it never moves

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

struct Outcome {
  int64_t used_milli = 0;  // GPU milli allocated at the end
  int placed = 0;
  double alloc_at_100 = 0;  // the published measure: allocation ratio in the 100% bucket
  double seconds = 0;
  int same_as_sim = -1;  // pods placed on the same node and GPUs as in the simulator (live only)
  std::string problem;   // a broken capacity or a refused submit (live only)
};

// The allocation ratio at the end and in the 100% bucket, from per-event figures.
void Summarize(sim::PlacementRun run, int max_percent, Outcome& out) {
  run.frag_ratio.assign(run.used_milli.size(), 0.0);
  out.used_milli = run.used_milli.empty() ? 0 : run.used_milli.back();
  const sim::PlacementCurves curves = sim::SummarizeCurves(run, max_percent);
  out.alloc_at_100 = curves.allocation.size() > 100 ? curves.allocation[100] : 0;
}

Outcome RunSim(const sim::OpenbWorkload& workload, const sim::PlacementOrder& order,
               const sched::WorkloadProfile& profile, const std::string& policy, uint64_t seed,
               int max_percent, sim::PlacementRun* run) {
  const auto start = std::chrono::steady_clock::now();
  auto placement = sched::MakePlacementPolicy(policy);
  sim::PreparePlacementPolicy(*placement, profile, workload);
  core::Rng rng(seed);
  *run = sim::RunPlacement(workload, order, *placement, profile, rng);
  Outcome out;
  out.seconds = Seconds(start);
  out.placed = static_cast<int>(order.pods.size()) - run->failed;
  Summarize(*run, max_percent, out);
  return out;
}

Outcome RunLive(const sim::OpenbWorkload& workload, const sim::PlacementOrder& order,
                std::shared_ptr<const sched::WorkloadProfile> profile, const std::string& policy,
                const sim::PlacementRun& sim_run, int max_percent) {
  Outcome out;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("gpufleet-live-placement-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto store = store::OpenSqliteStore(dir.string());
  if (!store) {
    out.problem = "store: " + store.error();
    return out;
  }
  controller::ControllerOptions options;
  options.data_dir = dir.string();
  options.queue_policy = "fifo";
  options.placement_policy = policy;
  options.workload_profile = std::move(profile);
  options.clock = [] { return kNowMs; };
  auto made = controller::Controller::Create(*store.value(), options);
  if (!made) {
    out.problem = made.error();
    return out;
  }
  controller::Controller& ctl = *made.value();
  if (auto r = ctl.Recover(kNowMs); !r) out.problem = "recover: " + r.error();

  const auto start = std::chrono::steady_clock::now();
  const core::GpuCatalog& catalog = core::GpuCatalog::Builtin();
  const size_t n = workload.nodes.size();
  std::vector<size_t> by_rank(n);
  for (size_t i = 0; i < n; ++i) by_rank[order.node_rank[i]] = i;
  std::map<std::string, size_t> node_of;  // name -> workload node
  const auto beat_of = [&](size_t i) {
    const core::NodeSpec& spec = workload.nodes[i];
    net::Heartbeat beat;
    beat.node = spec.name;
    beat.gpus = spec.num_gpus;
    beat.gpu_model = catalog.model(spec.model).name;
    beat.cpu_milli = spec.cpu_milli;
    beat.memory_mib = spec.memory_mib;
    beat.simulated = true;
    return beat;
  };
  for (size_t i : by_rank) {
    node_of[workload.nodes[i].name] = i;
    if (auto r = ctl.Heartbeat(beat_of(i), kNowMs); !r && out.problem.empty()) {
      out.problem = "heartbeat: " + r.error();
    }
  }

  // Pod by pod: submit, one pass, cancel what did not fit.
  sim::PlacementRun live;
  live.capacity_milli = sim_run.capacity_milli;
  std::map<int64_t, size_t> event_of;  // job id -> event
  int64_t arrived = 0, used = 0;
  for (size_t e = 0; e < order.pods.size(); ++e) {
    const sim::OpenbPod& pod = workload.pods[order.pods[e]];
    const core::JobSpec& spec = pod.job;
    store::JobRecord job;
    job.user = "openb";
    job.name = spec.name;
    job.argv = {"sleep", "infinity"};
    job.gpus = spec.UsesGpu() ? spec.num_gpu : 0;
    job.gpu_milli = spec.UsesGpu() ? spec.gpu_milli : 0;  // CPU-only: no GPU at all
    job.gpu_type = pod.spec_label;
    job.cpu_milli = spec.cpu_milli;
    job.memory_mib = spec.memory_mib;
    job.submit_ms = kNowMs;
    arrived += spec.GpuDemandMilli();
    auto id = ctl.Submit(job);
    if (!id) {
      // A pod no node could ever hold is refused at submit (since 2026-12): the live form of the
      // experiment's dropped pod, as long as the simulator dropped it too.
      if (sim_run.node[e] >= 0 && out.problem.empty()) {
        out.problem = "submit " + spec.name + ": " + id.error();
      }
    } else {
      ctl.RunOnce(kNowMs);
      if (ctl.Stats().waiting > 0) {
        if (auto c = ctl.Cancel(id.value(), kNowMs); !c && out.problem.empty()) {
          out.problem = "cancel: " + c.error();
        }
      } else {
        event_of[id.value()] = e;
        used += spec.GpuDemandMilli();
        ++out.placed;
      }
    }
    live.arrived_milli.push_back(arrived);
    live.used_milli.push_back(used);
  }
  out.seconds = Seconds(start);

  // What every node is told to run, checked against its capacity and the simulator.
  int64_t told_milli = 0;
  int told_jobs = 0;
  out.same_as_sim = 0;
  for (size_t i = 0; i < n; ++i) {
    auto reply = ctl.Heartbeat(beat_of(i), kNowMs);
    if (!reply) {
      out.problem = "final heartbeat: " + reply.error();
      break;
    }
    const core::NodeSpec& spec = workload.nodes[i];
    std::vector<int64_t> gpu_used(spec.num_gpus, 0);
    int64_t cpu = 0, memory = 0;
    for (const net::Assignment& a : reply.value().assignments) {
      auto it = event_of.find(a.id);
      if (it == event_of.end() || a.stop) continue;
      const size_t e = it->second;
      const core::JobSpec& job = workload.pods[order.pods[e]].job;
      ++told_jobs;
      cpu += a.cpu_milli;
      memory += a.memory_mib;
      core::GpuMask mask = 0;
      for (int g : a.gpu_indices) {
        if (g < 0 || g >= spec.num_gpus) {
          out.problem = spec.name + ": GPU " + std::to_string(g) + " out of range";
          continue;
        }
        mask |= core::GpuMask{1} << g;
        gpu_used[g] += job.gpu_milli;
        told_milli += job.gpu_milli;
      }
      if (sim_run.node[e] >= 0 && static_cast<size_t>(sim_run.node[e]) == i &&
          sim_run.gpus[e] == mask) {
        ++out.same_as_sim;
      }
    }
    for (int g = 0; g < spec.num_gpus; ++g) {
      if (gpu_used[g] > core::kGpuMilli) out.problem = spec.name + ": GPU over-allocated";
    }
    if (cpu > spec.cpu_milli) out.problem = spec.name + ": CPU over-allocated";
    if (memory > spec.memory_mib) out.problem = spec.name + ": memory over-allocated";
  }
  if (out.problem.empty() && (told_jobs != out.placed || told_milli != used)) {
    out.problem = "nodes were told " + std::to_string(told_jobs) + " jobs / " +
                  std::to_string(told_milli) + " milli; placed " + std::to_string(out.placed) +
                  " / " + std::to_string(used);
  }
  Summarize(live, max_percent, out);
  made.value().reset();
  store.value().reset();
  std::filesystem::remove_all(dir);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string traces = std::string(GPUFLEET_SOURCE_DIR) + "/../shared/traces/alibaba-openb-2023";
  std::string pods = "openb_pod_list_default.csv";
  std::vector<std::string> seeds = {"42"};
  std::vector<std::string> policies = {"gpupacking", "bestfit", "fgd", "fgd-balance"};
  std::vector<std::string> modes = {"given", "learnt"};
  double tune = 1.3;
  int synthetic = 0;
  bool check = false;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--check") {
      check = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", flag.c_str());
      return 2;
    }
    const std::string value = argv[i + 1];
    if (flag == "--synthetic") {
      synthetic = std::stoi(value);
    } else if (flag == "--traces") {
      traces = value;
    } else if (flag == "--pods") {
      pods = value;
    } else if (flag == "--seeds") {
      seeds = Split(value);
    } else if (flag == "--policies") {
      policies = Split(value);
    } else if (flag == "--modes") {
      modes = Split(value);
    } else if (flag == "--tune") {
      tune = std::stod(value);
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  const std::string nodes_path = traces + "/openb_node_list_gpu_node.csv";
  const std::string pods_path = traces + "/" + pods;
  if (synthetic > 0) {
    pods = "synthetic-" + std::to_string(synthetic);
  } else if (!std::filesystem::exists(nodes_path) || !std::filesystem::exists(pods_path)) {
    std::printf("skipped: the openb traces are not at %s (see ../shared/traces)\n", traces.c_str());
    return 0;
  }
  for (const std::string& p : policies) {
    if (!sched::MakePlacementPolicy(p)) {
      std::fprintf(stderr, "unknown policy %s; known: %s\n", p.c_str(),
                   sched::PlacementPolicyNames().c_str());
      return 2;
    }
  }
  auto workload = synthetic > 0
                      ? core::Result<sim::OpenbWorkload>(sim::GenerateSyntheticOpenb(
                            core::GpuCatalog::Builtin(), synthetic, tune, std::stoull(seeds.at(0))))
                      : sim::ReadOpenbWorkload(nodes_path, pods_path, core::GpuCatalog::Builtin());
  if (!workload) {
    std::fprintf(stderr, "%s\n", workload.error().c_str());
    return 1;
  }
  const auto profile =
      std::make_shared<const sched::WorkloadProfile>(sim::ProfileOf(workload.value()));
  const int max_percent = static_cast<int>(tune * 100 + 0.5);
  std::printf(
      "pods,seed,policy,events,capacity_milli,sim_alloc_end,sim_alloc_100,sim_placed,sim_s,"
      "live_given_alloc_end,live_given_alloc_100,live_given_placed,live_given_same,live_given_s,"
      "live_learnt_alloc_end,live_learnt_alloc_100,live_learnt_placed,live_learnt_same,"
      "live_learnt_s,problem\n");
  bool failed = false;
  for (const std::string& seed_text : seeds) {
    const uint64_t seed = std::stoull(seed_text);
    const std::string order_path = sim::PublishedOrderPath(traces + "/orders", pods_path, seed);
    sim::PlacementOrder order;
    if (synthetic == 0 && std::filesystem::exists(order_path)) {
      auto read = sim::ReadOrderFile(order_path, workload.value());
      if (!read) {
        std::fprintf(stderr, "%s\n", read.error().c_str());
        return 1;
      }
      order = std::move(read).value();
    } else {
      order = sim::GenerateOrder(workload.value(), seed, tune);
    }
    int64_t capacity = 0;
    for (const core::NodeSpec& node : workload.value().nodes) {
      capacity += int64_t{node.num_gpus} * core::kGpuMilli;
    }
    const auto ratio = [&](int64_t milli) {
      return 100.0 * static_cast<double>(milli) / static_cast<double>(capacity);
    };
    for (const std::string& policy : policies) {
      sim::PlacementRun sim_run;
      const Outcome s =
          RunSim(workload.value(), order, *profile, policy, seed, max_percent, &sim_run);
      Outcome given, learnt;
      const bool run_given = std::count(modes.begin(), modes.end(), "given") > 0;
      const bool run_learnt = std::count(modes.begin(), modes.end(), "learnt") > 0;
      if (run_given) {
        given = RunLive(workload.value(), order, profile, policy, sim_run, max_percent);
      }
      if (run_learnt) {
        learnt = RunLive(workload.value(), order, nullptr, policy, sim_run, max_percent);
      }
      std::string problem = given.problem.empty() ? learnt.problem : given.problem;
      std::replace(problem.begin(), problem.end(), ',', ';');
      std::printf("%s,%s,%s,%zu,%lld,%.2f,%.2f,%d,%.3f,", pods.c_str(), seed_text.c_str(),
                  policy.c_str(), order.pods.size(), static_cast<long long>(capacity),
                  ratio(s.used_milli), s.alloc_at_100, s.placed, s.seconds);
      for (const auto* o : {&given, &learnt}) {
        const bool ran = o == &given ? run_given : run_learnt;
        if (ran) {
          std::printf("%.2f,%.2f,%d,%d,%.2f,", ratio(o->used_milli), o->alloc_at_100, o->placed,
                      o->same_as_sim, o->seconds);
        } else {
          std::printf(",,,,,");
        }
      }
      std::printf("%s\n", problem.c_str());
      std::fflush(stdout);
      if (check && run_given &&
          (!problem.empty() || given.same_as_sim != s.placed || given.placed != s.placed ||
           given.used_milli != s.used_milli)) {
        std::fprintf(stderr,
                     "check failed: %s seed %s %s: live placed %d (%d as the simulator), "
                     "simulator %d\n",
                     pods.c_str(), seed_text.c_str(), policy.c_str(), given.placed,
                     given.same_as_sim, s.placed);
        failed = true;
      }
    }
  }
  return failed ? 1 : 0;
}

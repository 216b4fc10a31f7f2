// An upper bound on the GPU allocation any placement policy can reach in the openb experiment
// (issue 18, section 2), next to what FGD and fgd-balance reach on the same orders.
//
// For every order, the pods delivered by the end of the chosen bucket (130% of capacity by
// default) go into sim::BuildPlacementBound's linear program, which GLPK's simplex maximizes. The
// policies' published-style allocation at that bucket is read from a normal placement run.
//
// Usage: placement_bound [--traces DIR] [--pods NAME[,NAME..]] [--seeds N] [--percent P]
//                        [--policies fgd,fgd-balance] [--pods-file CSV --seeded]
//        placement_bound --ordered NODES [--instances N] [--time-limit SECONDS] [--pods NAME]
//                        [--solver cbc|glpk]
//   --pods       shared pod lists in DIR (default: default,gpushare40,multigpu20,gpuspec10),
//                placed in their published orders (seeds 42..41+N; generated when missing)
//   --pods-file  one more pod list anywhere, placed in seeded orders 42..41+N
// Prints one markdown table row per order and a mean row per pod list.
//
// --ordered: the order-aware integer program of sim/ordered_bound.h instead, on N small instances
// of NODES random nodes each (seeds 1..N) drawn from --pods-file, or else from the first pod list
// (default: default). Each is solved within the time limit (default 60 s) by COIN-OR CBC (the
// `cbc` program, Debian coinor-cbc; much stronger than GLPK here), started from the best policy's
// placement, or by GLPK's branch and cut where cbc is missing. A row per instance: the program's
// upper bound (the optimum when solved, else the best bound the solver proved, "open"), the best
// placement found, the order-free bound of the same pods, and the policies' final allocation.
#include "sim/placement_bound.h"

#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/gpu_catalog.h"
#include "core/text.h"
#include "sched/policy_registry.h"
#include "sim/ordered_bound.h"
#include "sim/placement_report.h"

namespace {

using namespace gpufleet;
namespace fs = std::filesystem;

// `lp` as a GLPK problem (maximize), its integer columns marked when `integer`; the caller
// deletes it.
glp_prob* ToGlpk(const sim::LinearProgram& lp, bool integer) {
  glp_prob* prob = glp_create_prob();
  glp_set_obj_dir(prob, GLP_MAX);
  glp_set_obj_name(prob, "allocated");
  const int columns = static_cast<int>(lp.objective.size());
  const int rows = static_cast<int>(lp.rows.size());
  if (columns > 0) glp_add_cols(prob, columns);
  for (int j = 0; j < columns; ++j) {
    glp_set_col_name(prob, j + 1, lp.column_names[j].c_str());
    glp_set_col_bnds(prob, j + 1, GLP_DB, 0.0, lp.column_upper[j]);
    glp_set_obj_coef(prob, j + 1, lp.objective[j]);
    if (integer && !lp.integer.empty() && lp.integer[j]) glp_set_col_kind(prob, j + 1, GLP_IV);
  }
  if (rows > 0) glp_add_rows(prob, rows);
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  for (int i = 0; i < rows; ++i) {
    glp_set_row_name(prob, i + 1, lp.rows[i].name.c_str());
    glp_set_row_bnds(prob, i + 1, GLP_UP, 0.0, lp.rows[i].upper);
    for (const auto& [column, coefficient] : lp.rows[i].terms) {
      ia.push_back(i + 1);
      ja.push_back(column + 1);
      ar.push_back(coefficient);
    }
  }
  glp_load_matrix(prob, static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
  return prob;
}

// The optimum of `lp` (maximize, every column continuous), or nullopt with a message when GLPK
// does not reach one.
std::optional<double> Maximize(const sim::LinearProgram& lp, std::string* why) {
  if (lp.objective.empty()) return 0.0;
  glp_prob* prob = ToGlpk(lp, false);
  glp_smcp params;
  glp_init_smcp(&params);
  params.msg_lev = GLP_MSG_OFF;
  params.presolve = GLP_ON;
  const int rc = glp_simplex(prob, &params);
  std::optional<double> out;
  if (rc == 0 && glp_get_status(prob) == GLP_OPT) {
    out = glp_get_obj_val(prob);
  } else {
    *why = "GLPK simplex returned " + std::to_string(rc) + ", status " +
           std::to_string(glp_get_status(prob));
  }
  glp_delete_prob(prob);
  return out;
}

struct IntegerResult {
  bool solved = false;    // the optimum was proved
  double bound = 0;       // an upper bound on the optimum (the optimum when solved)
  double incumbent = -1;  // the best integer point found, -1 when none
  double seconds = 0;
};

// GLPK's branch-and-bound callback: the best bound of the open nodes, kept as the smallest seen.
void TrackBound(glp_tree* tree, void* info) {
  auto* bound = static_cast<double*>(info);
  const int node = glp_ios_best_node(tree);
  if (node != 0) *bound = std::min(*bound, glp_ios_node_bound(tree, node));
}

// Maximizes `lp` with its integer columns whole, for at most `seconds`, with GLPK.
std::optional<IntegerResult> MaximizeWithGlpk(const sim::LinearProgram& lp, double seconds,
                                              std::string* why) {
  glp_term_out(GLP_OFF);  // the cut generators print even with msg_lev off
  glp_prob* prob = ToGlpk(lp, true);
  double open_bound = 1e300;
  glp_iocp params;
  glp_init_iocp(&params);
  params.msg_lev = GLP_MSG_OFF;
  params.presolve = GLP_ON;
  params.gmi_cuts = GLP_ON;
  params.mir_cuts = GLP_ON;
  params.cov_cuts = GLP_ON;
  params.clq_cuts = GLP_ON;
  params.tm_lim = static_cast<int>(seconds * 1000);
  params.cb_func = TrackBound;
  params.cb_info = &open_bound;
  const auto start = std::chrono::steady_clock::now();
  const int rc = glp_intopt(prob, &params);
  IntegerResult out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int status = glp_mip_status(prob);
  std::optional<IntegerResult> result;
  if (rc == 0 && status == GLP_OPT) {
    out.solved = true;
    out.bound = out.incumbent = glp_mip_obj_val(prob);
    result = out;
  } else if (rc == GLP_ETMLIM && open_bound < 1e300) {
    if (status == GLP_FEAS) out.incumbent = glp_mip_obj_val(prob);
    out.bound = std::max(open_bound, out.incumbent);
    result = out;
  } else {
    *why = "GLPK intopt returned " + std::to_string(rc) + ", status " + std::to_string(status);
  }
  glp_delete_prob(prob);
  return result;
}

// The number after `label` on the last line of `text` that holds it, if any.
std::optional<double> NumberAfter(const std::string& text, const std::string& label) {
  const size_t at = text.rfind(label);
  if (at == std::string::npos) return std::nullopt;
  char* end = nullptr;
  const char* begin = text.c_str() + at + label.size();
  const double value = std::strtod(begin, &end);
  if (end == begin) return std::nullopt;
  return value;
}

// Maximizes `lp` with its integer columns whole, for at most `seconds` of wall time, with COIN-OR
// CBC (the `cbc` program, Debian coinor-cbc): the program goes to it as an MPS file in `scratch`
// (a private directory), with `start` (a point of the program, a policy's run) as its first
// solution. The bound is CBC's "Upper bound" whenever it prints one; it prints 3 decimals, which
// stays a valid bound because every objective coefficient is a multiple of 0.001 GPU.
std::optional<IntegerResult> MaximizeWithCbc(const sim::LinearProgram& lp,
                                             const std::vector<double>& start, double seconds,
                                             const fs::path& scratch, std::string* why) {
  if (scratch.string().find('\'') != std::string::npos) {
    *why = "the scratch directory's name has a quote: " + scratch.string();
    return std::nullopt;
  }
  const fs::path model = scratch / "model.mps", first = scratch / "start.sol",
                 log = scratch / "cbc.log";
  glp_term_out(GLP_OFF);  // GLPK tells of every file it writes
  glp_prob* prob = ToGlpk(lp, true);
  const int written = glp_write_mps(prob, GLP_MPS_FILE, nullptr, model.c_str());
  glp_delete_prob(prob);
  if (written != 0) {
    *why = "could not write " + model.string();
    return std::nullopt;
  }
  {
    std::FILE* f = std::fopen(first.c_str(), "w");
    if (f == nullptr) {
      *why = "could not write " + first.string();
      return std::nullopt;
    }
    std::fprintf(f, "Stopped on iterations - objective value 0\n");
    for (size_t j = 0; j < start.size(); ++j) {
      std::fprintf(f, "%zu %s %.17g\n", j, lp.column_names[j].c_str(), start[j]);
    }
    std::fclose(f);
  }
  const std::string command = "cbc '" + model.string() + "' -max -timeMode elapsed -sec " +
                              std::to_string(seconds) + " -mips '" + first.string() +
                              "' -solve -quit > '" + log.string() + "' 2>&1";
  const auto begin = std::chrono::steady_clock::now();
  const int rc = std::system(command.c_str());
  IntegerResult out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  std::string text;
  if (std::FILE* f = std::fopen(log.c_str(), "r")) {
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text.append(buffer, n);
    std::fclose(f);
  }
  if (rc != 0) {
    *why = "cbc failed (exit " + std::to_string(rc) + "), see " + log.string();
    return std::nullopt;
  }
  const std::optional<double> objective = NumberAfter(text, "Objective value:");
  const std::optional<double> bound = NumberAfter(text, "Upper bound:");
  const bool optimal = text.find("Result - Optimal solution found") != std::string::npos &&
                       text.find("Exiting on maximum time") == std::string::npos;
  if (objective) out.incumbent = *objective;
  if (optimal && objective) {
    out.solved = true;
    out.bound = bound ? std::max(*bound, *objective) : *objective;
    return out;
  }
  if (!bound) {
    *why = "cbc stopped without an upper bound, see " + log.string();
    return std::nullopt;
  }
  out.bound = objective ? std::max(*bound, *objective) : *bound;
  return out;
}

// The non-empty items of a comma-separated list.
std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  for (std::string_view item : core::SplitText(s, ',')) {
    if (!item.empty()) out.emplace_back(item);
  }
  return out;
}

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "placement_bound: %s\nusage: placement_bound [--traces DIR] [--pods NAMES] "
               "[--pods-file CSV] [--seeds N] [--percent P] [--policies NAMES]\n",
               why);
  std::exit(2);
}

struct Stats {
  double bound = 0;
  std::vector<double> policy;
  int orders = 0;
};

// --ordered: one table row per small instance, then the means.
int RunOrdered(const std::string& nodes_path, const std::string& pods_path, int nodes,
               int instances, double seconds, const std::string& solver,
               const std::vector<std::string>& policies) {
  auto w = sim::ReadOpenbWorkload(nodes_path, pods_path, core::GpuCatalog::Builtin());
  if (!w) {
    std::fprintf(stderr, "placement_bound: %s\n", w.error().c_str());
    return 1;
  }
  if (policies.empty()) Usage("--ordered needs at least one policy");
  std::string pattern = (fs::temp_directory_path() / "placement_bound.XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::fprintf(stderr, "placement_bound: cannot make a directory like %s\n", pattern.c_str());
    return 1;
  }
  const fs::path scratch = pattern;
  struct RemoveScratch {  // on every return; PLACEMENT_BOUND_KEEP keeps the models and logs
    fs::path path;
    ~RemoveScratch() {
      std::error_code ignored;
      if (std::getenv("PLACEMENT_BOUND_KEEP") == nullptr) fs::remove_all(path, ignored);
    }
  } remove_scratch{scratch};
  std::printf(
      "| instance | GPUs per node | pods | binaries | order-free bound %% | bound %% |"
      " best found %% |");
  for (const auto& p : policies) std::printf(" %s %% |", p.c_str());
  std::printf(" bound - best policy %% | seconds |\n|---|---|---|---|---|---|---|");
  for (size_t i = 0; i < policies.size() + 2; ++i) std::printf("---|");
  std::printf("\n");
  double bound_sum = 0, found_sum = 0, free_sum = 0, gap_sum = 0;
  std::vector<double> policy_sum(policies.size(), 0);
  int solved = 0;
  for (int s = 1; s <= instances; ++s) {
    core::Rng rng(static_cast<uint64_t>(s));
    const sim::OrderedInstance instance = sim::OrderedSubsample(w.value(), nodes, 1.3, rng);
    const sim::OpenbWorkload& sub = instance.workload;
    const sim::OrderedPlacementProgram program = sim::BuildOrderedPlacementProgram(sub);
    const double to_percent = 100.0 / program.capacity_gpus;
    // The policies first: the best one's run is the solver's first solution.
    const sched::WorkloadProfile profile = sim::ProfileOf(sub);
    std::vector<double> allocated(policies.size());
    std::vector<double> start;
    double best = -1;
    for (size_t p = 0; p < policies.size(); ++p) {
      auto policy = sched::MakePlacementPolicy(policies[p]);
      if (!policy) {
        std::fprintf(stderr, "placement_bound: unknown policy %s\n", policies[p].c_str());
        return 2;
      }
      sim::PreparePlacementPolicy(*policy, profile, sub);
      core::Rng policy_rng(static_cast<uint64_t>(s));
      const sim::PlacementRun run =
          sim::RunPlacement(sub, instance.order, *policy, profile, policy_rng);
      allocated[p] = static_cast<double>(run.used_milli.back()) / core::kGpuMilli;
      if (allocated[p] > best) {
        best = allocated[p];
        start = sim::OrderedSolutionOf(program, sub, run);
      }
    }
    std::string why;
    const fs::path instance_scratch = scratch / std::to_string(s);
    fs::create_directories(instance_scratch);
    const auto result = solver == "cbc"
                            ? MaximizeWithCbc(program.lp, start, seconds, instance_scratch, &why)
                            : MaximizeWithGlpk(program.lp, seconds, &why);
    if (!result) {
      std::fprintf(stderr, "placement_bound: instance %d: %s\n", s, why.c_str());
      return 1;
    }
    std::vector<int> all(sub.pods.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    const auto order_free = Maximize(sim::BuildPlacementBound(sub, all).lp, &why);
    if (!order_free) {
      std::fprintf(stderr, "placement_bound: instance %d: %s\n", s, why.c_str());
      return 1;
    }
    std::string shape;
    for (const auto& n : sub.nodes) {
      shape += (shape.empty() ? "" : "+") + std::to_string(n.num_gpus);
    }
    std::printf("| %d | %s | %zu | %d | %.2f | %.2f%s | %.2f |", s, shape.c_str(), sub.pods.size(),
                program.binary_columns, *order_free * to_percent, result->bound * to_percent,
                result->solved ? "" : " (open)", std::max(result->incumbent, best) * to_percent);
    for (size_t p = 0; p < policies.size(); ++p) {
      if (allocated[p] > result->bound + 1e-6) {
        std::fprintf(stderr, "placement_bound: %s beat the ordered bound (%.4f > %.4f): a bug\n",
                     policies[p].c_str(), allocated[p], result->bound);
        return 3;
      }
      policy_sum[p] += allocated[p] * to_percent;
      std::printf(" %.2f |", allocated[p] * to_percent);
    }
    std::printf(" %.2f | %.1f |\n", (result->bound - best) * to_percent, result->seconds);
    std::fflush(stdout);
    bound_sum += result->bound * to_percent;
    found_sum += std::max(result->incumbent, best) * to_percent;  // a policy's run is found too
    gap_sum += (result->bound - best) * to_percent;
    free_sum += *order_free * to_percent;
    solved += result->solved ? 1 : 0;
  }
  std::printf("| **mean of %d** (%d solved) | | | | **%.2f** | **%.2f** | **%.2f** |", instances,
              solved, free_sum / instances, bound_sum / instances, found_sum / instances);
  for (double total : policy_sum) std::printf(" **%.2f** |", total / instances);
  std::printf(" **%.2f** | |\n", gap_sum / instances);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string traces =
      (fs::path(GPUFLEET_SOURCE_DIR) / ".." / "shared" / "traces" / "alibaba-openb-2023").string();
  std::vector<std::string> pod_lists = {"openb_pod_list_default", "openb_pod_list_gpushare40",
                                        "openb_pod_list_multigpu20", "openb_pod_list_gpuspec10"};
  std::string pods_file;
  std::vector<std::string> policies = {"fgd", "fgd-balance"};
  int seeds = 10, percent = 130, ordered_nodes = 0, instances = 10;
  double time_limit = 60;
  std::string solver = std::system("command -v cbc > /dev/null 2>&1") == 0 ? "cbc" : "glpk";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(("missing value of " + arg).c_str());
      return argv[++i];
    };
    if (arg == "--traces") {
      traces = value();
    } else if (arg == "--pods") {
      pod_lists.clear();
      for (const auto& name : SplitCommas(value())) pod_lists.push_back("openb_pod_list_" + name);
    } else if (arg == "--pods-file") {
      pods_file = value();
    } else if (arg == "--seeds") {
      seeds = std::atoi(value().c_str());
      if (seeds < 1 || seeds > 100) Usage("--seeds must be 1..100");
    } else if (arg == "--percent") {
      percent = std::atoi(value().c_str());
      if (percent < 1 || percent > 130) Usage("--percent must be 1..130 (the orders stop at 130)");
    } else if (arg == "--ordered") {
      ordered_nodes = std::atoi(value().c_str());
      if (ordered_nodes < 1 || ordered_nodes > 64) Usage("--ordered must be 1..64 nodes");
    } else if (arg == "--instances") {
      instances = std::atoi(value().c_str());
      if (instances < 1 || instances > 1000) Usage("--instances must be 1..1000");
    } else if (arg == "--time-limit") {
      time_limit = std::atof(value().c_str());
      if (!(time_limit > 0 && time_limit <= 86400)) Usage("--time-limit must be 0..86400 s");
    } else if (arg == "--solver") {
      solver = value();
      if (solver != "cbc" && solver != "glpk") Usage("--solver must be cbc or glpk");
    } else if (arg == "--policies") {
      policies = SplitCommas(value());
    } else {
      Usage(("unknown argument " + arg).c_str());
    }
  }
  const std::string nodes = (fs::path(traces) / "openb_node_list_gpu_node.csv").string();
  if (!fs::exists(nodes)) {
    std::fprintf(stderr, "placement_bound: needs the shared openb traces in %s\n", traces.c_str());
    return 1;
  }
  if (ordered_nodes > 0) {
    if (pod_lists.empty() && pods_file.empty()) {
      Usage("--ordered needs a pod list (--pods NAME or --pods-file CSV)");
    }
    const std::string pods_path =
        !pods_file.empty() ? pods_file : (fs::path(traces) / (pod_lists.front() + ".csv")).string();
    return RunOrdered(nodes, pods_path, ordered_nodes, instances, time_limit, solver, policies);
  }
  struct Input {
    std::string name, path;
    bool published;
  };
  std::vector<Input> inputs;
  for (const auto& name : pod_lists) {
    inputs.push_back({name, (fs::path(traces) / (name + ".csv")).string(), true});
  }
  if (!pods_file.empty()) inputs.push_back({fs::path(pods_file).stem().string(), pods_file, false});

  std::printf("| pods | order | GPU pods arrived | pod types | node classes | bound %% |");
  for (const auto& p : policies) std::printf(" %s %% |", p.c_str());
  std::printf(" bound - best %% |\n|---|---|---|---|---|---|");
  for (size_t i = 0; i <= policies.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (const Input& input : inputs) {
    auto w = sim::ReadOpenbWorkload(nodes, input.path, core::GpuCatalog::Builtin());
    if (!w) {
      std::fprintf(stderr, "placement_bound: %s\n", w.error().c_str());
      return 1;
    }
    const sim::OpenbWorkload& workload = w.value();
    const sched::WorkloadProfile profile = sim::ProfileOf(workload);
    Stats stats;
    stats.policy.assign(policies.size(), 0);
    for (int s = 0; s < seeds; ++s) {
      const uint64_t seed = 42 + static_cast<uint64_t>(s);
      const std::string order_path =
          sim::PublishedOrderPath((fs::path(traces) / "orders").string(), input.path, seed);
      sim::PlacementOrder order;
      if (input.published && fs::exists(order_path)) {
        auto read = sim::ReadOrderFile(order_path, workload);
        if (!read) {
          std::fprintf(stderr, "placement_bound: %s\n", read.error().c_str());
          return 1;
        }
        order = std::move(read).value();
      } else {
        order = sim::GenerateOrder(workload, seed, 1.3);
      }
      const std::vector<int> arrived = sim::PodsArrivedBy(workload, order, percent);
      const sim::PlacementBoundModel model = sim::BuildPlacementBound(workload, arrived);
      std::string why;
      const std::optional<double> optimum = Maximize(model.lp, &why);
      if (!optimum) {
        std::fprintf(stderr, "placement_bound: %s seed %llu: %s\n", input.name.c_str(),
                     static_cast<unsigned long long>(seed), why.c_str());
        return 1;
      }
      const double bound = 100.0 * *optimum / model.capacity_gpus;
      int gpu_pods = 0;
      for (int p : arrived) gpu_pods += workload.pods[p].job.UsesGpu() ? 1 : 0;
      std::printf("| %s | %s | %d | %d | %d | %.2f |", input.name.c_str(),
                  fs::path(order.source).filename().string().c_str(), gpu_pods, model.pod_types,
                  model.node_classes, bound);
      double best = 0;
      for (size_t p = 0; p < policies.size(); ++p) {
        auto run = sim::RunPlacementSeed(workload, profile, policies[p], order, seed, 1.3);
        if (!run) {
          std::fprintf(stderr, "placement_bound: %s\n", run.error().c_str());
          return 1;
        }
        const double allocated = run.value().curves.allocation.at(static_cast<size_t>(percent));
        if (allocated > bound + 1e-6) {
          std::fprintf(stderr, "placement_bound: %s beat the bound (%.4f > %.4f): a bug\n",
                       policies[p].c_str(), allocated, bound);
          return 3;
        }
        best = std::max(best, allocated);
        stats.policy[p] += allocated;
        std::printf(" %.2f |", allocated);
      }
      std::printf(" %.2f |\n", bound - best);
      std::fflush(stdout);
      stats.bound += bound;
      ++stats.orders;
    }
    std::printf("| **%s** | **mean of %d** | | | | **%.2f** |", input.name.c_str(), stats.orders,
                stats.bound / stats.orders);
    double best = 0;
    for (double total : stats.policy) {
      std::printf(" **%.2f** |", total / stats.orders);
      best = std::max(best, total / stats.orders);
    }
    std::printf(" **%.2f** |\n", stats.bound / stats.orders - best);
  }
  return 0;
}

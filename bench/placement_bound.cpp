// An upper bound on the GPU allocation any placement policy can reach in the openb experiment
// (issue 18, section 2), next to what FGD and fgd-balance reach on the same orders.
//
// For every order, the pods delivered by the end of the chosen bucket (130% of capacity by
// default) go into sim::BuildPlacementBound's linear program, which GLPK's simplex maximizes. The
// policies' published-style allocation at that bucket is read from a normal placement run.
//
// Usage: placement_bound [--traces DIR] [--pods NAME[,NAME..]] [--seeds N] [--percent P]
//                        [--policies fgd,fgd-balance] [--pods-file CSV --seeded]
//   --pods       shared pod lists in DIR (default: default,gpushare40,multigpu20,gpuspec10),
//                placed in their published orders (seeds 42..41+N; generated when missing)
//   --pods-file  one more pod list anywhere, placed in seeded orders 42..41+N
// Prints one markdown table row per order and a mean row per pod list.
#include "sim/placement_bound.h"

#include <glpk.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/gpu_catalog.h"
#include "core/text.h"
#include "sim/placement_report.h"

namespace {

using namespace gpufleet;
namespace fs = std::filesystem;

// The optimum of `lp` (maximize), or nullopt with a message when GLPK does not reach one.
std::optional<double> Maximize(const sim::LinearProgram& lp, std::string* why) {
  glp_prob* prob = glp_create_prob();
  glp_set_obj_dir(prob, GLP_MAX);
  const int columns = static_cast<int>(lp.objective.size());
  const int rows = static_cast<int>(lp.rows.size());
  if (columns == 0) {
    glp_delete_prob(prob);
    return 0.0;
  }
  glp_add_cols(prob, columns);
  for (int j = 0; j < columns; ++j) {
    glp_set_col_bnds(prob, j + 1, GLP_DB, 0.0, lp.column_upper[j]);
    glp_set_obj_coef(prob, j + 1, lp.objective[j]);
  }
  glp_add_rows(prob, rows);
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  for (int i = 0; i < rows; ++i) {
    glp_set_row_bnds(prob, i + 1, GLP_UP, 0.0, lp.rows[i].upper);
    for (const auto& [column, coefficient] : lp.rows[i].terms) {
      ia.push_back(i + 1);
      ja.push_back(column + 1);
      ar.push_back(coefficient);
    }
  }
  glp_load_matrix(prob, static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
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

}  // namespace

int main(int argc, char** argv) {
  std::string traces =
      (fs::path(GPUFLEET_SOURCE_DIR) / ".." / "shared" / "traces" / "alibaba-openb-2023").string();
  std::vector<std::string> pod_lists = {"openb_pod_list_default", "openb_pod_list_gpushare40",
                                        "openb_pod_list_multigpu20", "openb_pod_list_gpuspec10"};
  std::string pods_file;
  std::vector<std::string> policies = {"fgd", "fgd-balance"};
  int seeds = 10, percent = 130;
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

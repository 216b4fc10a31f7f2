#include "cli/placement_cli.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "cli/full_commands.h"
#include "cli/heap_tuning.h"
#include "sched/policy_registry.h"

namespace gpufleet::cli {
namespace {

// One run of the default openb trace peaks near 10 MiB of heap; the replicated ones and the
// report's parallel runs use more, and simply grow the heap again.
constexpr std::size_t kBatchHeapBytes = std::size_t{64} << 20;

}  // namespace

void AddPlacementCommands(CLI::App& sim, PlacementCommandOptions& options) {
  const std::string policy_help = "placement policy: " + sched::PlacementPolicyNames();
  CLI::App* placement = sim.add_subcommand(
      "placement", "Place a pod list (openb format) on a node list, as in the FGD paper");
  placement
      ->add_option("--nodes", options.place.nodes_path,
                   "node list CSV (sn,cpu_milli,memory_mib,gpu,model)")
      ->required();
  placement
      ->add_option("--pods", options.place.pods_path,
                   "pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec])")
      ->required();
  placement->add_option("--policy", options.place.policy, policy_help)->capture_default_str();
  auto* order = placement->add_option("--order", options.place.order_path,
                                      "published order file (pod/node lines)");
  auto* orders_dir =
      placement->add_option("--orders-dir", options.place.orders_dir,
                            "folder of published orders, <pods>.seed<N>.txt for each seed");
  auto* seed =
      placement->add_option("--seed", options.place.seed, "first seed (order and random choices)")
          ->capture_default_str();
  order->excludes(orders_dir);
  (void)seed;
  placement->add_option("--seeds", options.place.seeds, "number of seeds to run; results are means")
      ->capture_default_str();
  placement
      ->add_option("--tune", options.place.tune,
                   "arrived GPU demand to reach, as a fraction of capacity")
      ->capture_default_str();
  auto* json = placement->add_flag("--json", options.place.json, "print one JSON object");
  placement->add_flag("--csv", options.place.csv, "print a CSV row per 1% of demand")
      ->excludes(json);
  placement->add_option("--decisions", options.place.decisions_path,
                        "write each pod's node and GPUs (first seed) to this CSV file");
  placement->add_option("--threads", options.place.threads,
                        "worker threads for several seeds (0: all cores)");
  placement->callback([&options] {
    UseLargeHeapPages(kBatchHeapBytes);
    std::exit(RunSimPlacement(options.place));
  });

  options.report.traces_dir = "../shared/traces/alibaba-openb-2023";
  CLI::App* report_cmd = sim.add_subcommand(
      "placement-report",
      "Run every placement policy on the openb traces with the published orders, compare with "
      "the published curves, and write a table and plots");
  report_cmd
      ->add_option("--traces", options.report.traces_dir,
                   "openb trace folder; when absent, a synthetic trace is used")
      ->capture_default_str();
  report_cmd
      ->add_option("--out", options.report.out_dir,
                   "where to write the table, curves and plots ('' for none)")
      ->capture_default_str();
  report_cmd->add_option("--policies", options.report.policies, policy_help)->delimiter(',');
  report_cmd
      ->add_option("--trace", options.report.traces, "pod list names (default: the four shipped)")
      ->delimiter(',');
  report_cmd->add_option("--seeds", options.report.seeds, "seeds 42.. to run")
      ->capture_default_str();
  report_cmd->add_flag("--check", options.report.check,
                       "exit 1 unless every deterministic curve matches the published one");
  report_cmd->add_option("--threads", options.report.threads, "worker threads (0: all cores)");
  report_cmd->callback([&options] {
    UseLargeHeapPages(kBatchHeapBytes);
    std::exit(RunSimPlacementReport(options.report));
  });
}

bool IsPlacementCommand(int argc, char** argv) {
  return argc > 2 && std::strcmp(argv[1], "sim") == 0 &&
         (std::strcmp(argv[2], "placement") == 0 || std::strcmp(argv[2], "placement-report") == 0);
}

int RunPlacementCommand(int argc, char** argv) {
  CLI::App app{kAppDescription};
  app.name("gpufleet");
  app.require_subcommand(1);
  CLI::App* sim = app.add_subcommand("sim", FullCommandDescription("sim"));
  sim->require_subcommand(1);
  PlacementCommandOptions options;
  AddPlacementCommands(*sim, options);
  CLI11_PARSE(app, argc, argv);
  return 0;  // not reached: the command's callback exits
}

}  // namespace gpufleet::cli

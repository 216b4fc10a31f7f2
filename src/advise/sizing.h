#pragma once
// Sizing and cost (issue 13, section 4): from what a job used (GPU-hours on a GPU model and count,
// its mean SM utilization, its scaling efficiency), estimates its run time and cost on every GPU
// model that has a price, on 1..N GPUs, on own hardware, cloud on-demand and spot; recommends the
// cheapest option that meets an optional deadline, and gives per model the utilization above which
// owning beats renting on demand. The answer carries its assumptions as text lines.
//
// The models, in short (the assumption lines say them with the figures):
// - Scaling (Amdahl): speedup(n) = 1 / ((1 - p) + p / n); p is fitted so that speedup(gpus) =
//   efficiency x gpus, the job's measured efficiency at the count it ran on.
// - Device speed: only the busy share of the run (its mean SM utilization) speeds up with a faster
//   GPU, by the ratio of catalog relative speeds; the rest (input, host) keeps its time.
// - Cloud: whole instances are billed per hour at list price; storage and egress are not counted.
// - Own: per GPU-hour used = (purchase + server overhead) x (1 / lifetime + ops share) /
//   (8760 h x utilization target) + (board power + server power) x PUE x electricity price.
//
// Pure: no clock, file or socket.
#include <optional>
#include <string>
#include <vector>

#include "advise/gpu_prices.h"
#include "advise/own_hardware.h"
#include "advise/usage_series.h"
#include "core/gpu_catalog.h"
#include "core/result.h"

namespace gpufleet::advise {

// What the job used, as measured.
struct SizingRequest {
  double gpu_hours = 0;     // GPUs held x wall hours, as the job ran
  std::string model;        // the GPU model it ran on, a catalog name or alias
  int gpus = 1;             // GPUs it ran on
  double sm_mean_pct = -1;  // mean SM utilization over its GPUs, %; -1: unknown (taken as 100)
  // speedup at `gpus` / `gpus`, e.g. from EstimateScalingEfficiency; none (or a 1-GPU job):
  // SizingOptions::assumed_parallel_fraction is used instead.
  std::optional<double> scaling_efficiency;
  std::optional<double> deadline_hours;  // wall hours the job must finish in
};

struct SizingOptions {
  int max_gpus = 8;  // options go from 1 to max(max_gpus, request.gpus) GPUs
  // Amdahl's p where scaling was not measured: 0.95 is a placeholder for data-parallel training
  // that syncs gradients every step, not a measurement.
  double assumed_parallel_fraction = 0.95;
  // Run time added on spot for preemptions (restarts from the last checkpoint), as a share.
  double spot_extra_time = 0.0;
};

struct SizingOption {
  std::string model;  // canonical catalog name
  int gpus = 0;
  double est_hours = 0;  // wall hours
  double cost_usd = 0;
  std::string where;  // "own" | "on-demand" | "spot"
  std::string offer;  // "aws p4d.24xlarge us-east-1", or "own" (which price row it used)
  bool placeholder_price = false;  // a price of the row is a placeholder
};

// For one GPU model: owning beats renting on demand when a GPU is used more than `utilization`
// of the hours. None when the on-demand price does not even cover owning's power.
struct BreakEven {
  std::string model;
  double on_demand_usd_per_gpu_hour = 0;  // the cheapest on-demand offer, per GPU
  double own_fixed_usd_per_gpu_year = 0;  // amortized purchase and operations
  double own_power_usd_per_gpu_hour = 0;  // while in use
  std::optional<double> utilization;      // 0..1 (above 1: owning never wins)
};

struct Sizing {
  std::vector<SizingOption> options;  // cheapest first (then quicker, fewer GPUs)
  // The cheapest option that meets the deadline (any option without one); none when no option
  // meets it, and `deadline_met` is false.
  std::optional<SizingOption> recommended;
  bool deadline_met = true;
  std::vector<BreakEven> break_even;     // per model with a purchase and an on-demand price
  std::vector<std::string> assumptions;  // one line each, for the user to check
};

// Amdahl's speedup on `gpus` GPUs of a job whose parallel share is `parallel_fraction` (0..1).
double AmdahlSpeedup(double parallel_fraction, int gpus);

// The parallel share p for which AmdahlSpeedup(p, gpus) = efficiency x gpus, clamped to 0..1.
// `gpus` must be at least 2 (one GPU says nothing about scaling).
double FitParallelFraction(double efficiency, int gpus);

// The cost of one GPU-hour used on own hardware, split as BreakEven reports it.
struct OwnGpuHourCost {
  double fixed_usd_per_year = 0;  // (purchase + server) x (1 / lifetime + ops share)
  double power_usd_per_hour = 0;  // (board + server) W x PUE x electricity price
  double at_target = 0;           // fixed / (8760 h x utilization target) + power
};
OwnGpuHourCost OwnCostPerGpuHour(double purchase_usd, double tdp_w, const OwnHardware& own);

// The utilization above which owning a GPU costs less per hour used than renting it at
// `on_demand_usd_per_gpu_hour`: fixed / (8760 h x (on-demand - power)); none when the on-demand
// price is not above the power cost.
std::optional<double> BreakEvenUtilization(const OwnGpuHourCost& own,
                                           double on_demand_usd_per_gpu_hour);

// Estimates a multi-GPU job's scaling efficiency from how evenly its GPUs were busy: the mean of
// the per-GPU busy shares (samples at SM >= 5%) over the largest. Limits: it sees unused GPUs,
// stragglers and imbalance, but not communication, which keeps every GPU alike waiting (and NCCL
// kernels count as busy SM), so it is an upper bound; only runs at two GPU counts measure scaling.
// None for fewer than two GPUs with samples, or when no GPU was ever busy.
std::optional<double> EstimateScalingEfficiency(const JobUsage& usage);

// Sizes the job against every model of `catalog` that has a price in `prices`. Errors: a request
// out of range (names the field), or its model not in the catalog.
core::Result<Sizing> Size(const SizingRequest& request, const core::GpuCatalog& catalog,
                          const PriceTable& prices, const OwnHardware& own,
                          const SizingOptions& options = {});

// The answer as JSON: {"sizing": [{model, gpus, est_hours, cost, where, offer}], "recommended",
// "deadline_met", "break_even": [{model, utilization, ...}], "assumptions": [...]}.
std::string SizingToJson(const Sizing& sizing);

}  // namespace gpufleet::advise

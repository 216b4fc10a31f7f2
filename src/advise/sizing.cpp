#include "advise/sizing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <tuple>

#include "core/check.h"

namespace gpufleet::advise {

namespace {

constexpr double kHoursPerYear = 8760;
constexpr int kMaxGpus = 64;

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// The prices of one catalog model, by kind.
struct ModelPrices {
  core::ModelId id = 0;
  const PriceRow* purchase = nullptr;  // the first purchase row
  std::vector<const PriceRow*> on_demand, spot;
};

// The cheapest way to rent `gpus` GPUs for `hours` from `rows`: whole instances, billed per hour.
std::optional<SizingOption> CheapestRental(const std::vector<const PriceRow*>& rows,
                                           const std::string& model, int gpus, double hours,
                                           const char* where) {
  std::optional<SizingOption> best;
  for (const PriceRow* row : rows) {
    const int instances = (gpus + row->gpus - 1) / row->gpus;
    const double cost = instances * row->usd * hours;
    if (best && cost >= best->cost_usd) continue;
    best = SizingOption{model,           gpus, hours, cost, where, row->provider + " " + row->offer,
                        row->placeholder};
  }
  return best;
}

bool Before(const SizingOption& a, const SizingOption& b) {
  return std::tie(a.cost_usd, a.est_hours, a.gpus, a.model, a.where, a.offer) <
         std::tie(b.cost_usd, b.est_hours, b.gpus, b.model, b.where, b.offer);
}

std::string Describe(const SizingOption& o) {
  return std::to_string(o.gpus) + " x " + o.model + " " + o.where + " (" + o.offer +
         "): " + Fixed(o.est_hours, 2) + " h, $" + Fixed(o.cost_usd, 2);
}

core::Error Invalid(const std::string& field, const std::string& what) {
  return core::Error{field + ": " + what, core::ErrorCode::kInvalid, field};
}

}  // namespace

double AmdahlSpeedup(double parallel_fraction, int gpus) {
  GPUFLEET_CHECK(gpus >= 1);
  return 1.0 / ((1.0 - parallel_fraction) + parallel_fraction / gpus);
}

double FitParallelFraction(double efficiency, int gpus) {
  GPUFLEET_CHECK(gpus >= 2 && efficiency > 0);
  // 1 / ((1 - p) + p / n) = e n  <=>  p (1 - 1/n) = 1 - 1 / (e n)
  const double p = (1.0 - 1.0 / (efficiency * gpus)) / (1.0 - 1.0 / gpus);
  return std::clamp(p, 0.0, 1.0);
}

OwnGpuHourCost OwnCostPerGpuHour(double purchase_usd, double tdp_w, const OwnHardware& own) {
  OwnGpuHourCost cost;
  const double capital = purchase_usd + own.server_overhead_usd_per_gpu;
  cost.fixed_usd_per_year = capital * (1.0 / own.lifetime_years + own.ops_share);
  cost.power_usd_per_hour =
      (tdp_w + own.server_overhead_watts_per_gpu) / 1000.0 * own.pue * own.electricity_usd_per_kwh;
  cost.at_target =
      cost.fixed_usd_per_year / (kHoursPerYear * own.utilization_target) + cost.power_usd_per_hour;
  return cost;
}

std::optional<double> BreakEvenUtilization(const OwnGpuHourCost& own,
                                           double on_demand_usd_per_gpu_hour) {
  const double margin = on_demand_usd_per_gpu_hour - own.power_usd_per_hour;
  if (!(margin > 0)) return std::nullopt;
  return own.fixed_usd_per_year / (kHoursPerYear * margin);
}

std::optional<double> EstimateScalingEfficiency(const JobUsage& usage) {
  double sum = 0, most = 0;
  int measured = 0;
  for (const GpuTotal& gpu : usage.gpus) {
    if (gpu.samples <= 0) continue;  // never read: unknown, not idle
    const double busy = static_cast<double>(gpu.busy_samples) / static_cast<double>(gpu.samples);
    sum += busy;
    most = std::max(most, busy);
    ++measured;
  }
  if (measured < 2 || !(most > 0)) return std::nullopt;
  return sum / measured / most;
}

namespace {

std::optional<core::Error> Validate(const SizingRequest& request, const core::GpuCatalog& catalog,
                                    const SizingOptions& options) {
  if (!std::isfinite(request.gpu_hours) || request.gpu_hours <= 0)
    return Invalid("gpu_hours", "not a positive number");
  if (request.gpus < 1 || request.gpus > kMaxGpus)
    return Invalid("gpus", "not from 1 to " + std::to_string(kMaxGpus));
  if (!catalog.Find(request.model))
    return Invalid("model", "unknown GPU model '" + request.model + "'");
  if (std::isnan(request.sm_mean_pct)) return Invalid("sm_mean_pct", "not a number");
  if (request.scaling_efficiency &&
      !(std::isfinite(*request.scaling_efficiency) && *request.scaling_efficiency > 0))
    return Invalid("scaling_efficiency", "not a positive number");
  if (request.deadline_hours &&
      !(std::isfinite(*request.deadline_hours) && *request.deadline_hours > 0))
    return Invalid("deadline_hours", "not a positive number");
  if (options.max_gpus < 1 || options.max_gpus > kMaxGpus)
    return Invalid("max_gpus", "not from 1 to " + std::to_string(kMaxGpus));
  if (!(options.assumed_parallel_fraction >= 0 && options.assumed_parallel_fraction <= 1))
    return Invalid("assumed_parallel_fraction", "not from 0 to 1");
  if (!(std::isfinite(options.spot_extra_time) && options.spot_extra_time >= 0))
    return Invalid("spot_extra_time", "not a non-negative number");
  return std::nullopt;
}

// The price rows by catalog model, in catalog order; the names of rows' models not in the catalog
// go to `unknown`.
std::vector<ModelPrices> GroupPrices(const core::GpuCatalog& catalog, const PriceTable& prices,
                                     std::vector<std::string>& unknown) {
  std::vector<ModelPrices> by_model;
  for (const PriceRow& row : prices.rows) {
    auto id = catalog.Find(row.model);
    if (!id) {
      if (std::find(unknown.begin(), unknown.end(), row.model) == unknown.end())
        unknown.push_back(row.model);
      continue;
    }
    auto it = std::find_if(by_model.begin(), by_model.end(),
                           [&](const ModelPrices& m) { return m.id == *id; });
    if (it == by_model.end()) {
      by_model.push_back(ModelPrices{*id, nullptr, {}, {}});
      it = by_model.end() - 1;
    }
    switch (row.kind) {
      case PriceKind::kPurchase:
        if (!it->purchase) it->purchase = &row;
        break;
      case PriceKind::kOnDemand:
        it->on_demand.push_back(&row);
        break;
      case PriceKind::kSpot:
        it->spot.push_back(&row);
        break;
    }
  }
  std::sort(by_model.begin(), by_model.end(),
            [](const ModelPrices& a, const ModelPrices& b) { return a.id < b.id; });
  return by_model;
}

// The job's work and how it scales, as the options need them; says how in `notes`.
struct Work {
  double single_gpu_hours = 0;  // on one GPU of the measured model
  double busy = 1;              // share of the run that scales with device speed
  double parallel_fraction = 0;
  double measured_speed = 1;
};

Work DescribeWork(const SizingRequest& request, const core::GpuModel& measured,
                  const SizingOptions& options, std::vector<std::string>& notes) {
  Work work;
  work.measured_speed = measured.relative_speed;
  const double run_hours = request.gpu_hours / request.gpus;
  notes.push_back("Work: " + Fixed(request.gpu_hours, 2) + " GPU-hours measured on " +
                  std::to_string(request.gpus) + " x " + measured.name + ", so " +
                  Fixed(run_hours, 2) + " h wall time.");
  double p = options.assumed_parallel_fraction;
  if (request.gpus >= 2 && request.scaling_efficiency) {
    p = FitParallelFraction(*request.scaling_efficiency, request.gpus);
    notes.push_back("Scaling (Amdahl): speedup(n) = 1 / ((1 - p) + p / n), p = " + Fixed(p, 3) +
                    ", fitted to the measured efficiency " + Fixed(*request.scaling_efficiency, 2) +
                    " at " + std::to_string(request.gpus) + " GPUs (speedup " +
                    Fixed(AmdahlSpeedup(p, request.gpus), 2) +
                    "). Communication that grows with n is not modeled: more GPUs than measured "
                    "are likely slower than this.");
  } else {
    notes.push_back("Scaling (Amdahl): speedup(n) = 1 / ((1 - p) + p / n), p = " + Fixed(p, 3) +
                    " assumed, not measured (" +
                    (request.gpus < 2 ? std::string("the job ran on one GPU")
                                      : std::string("no scaling efficiency given")) +
                    "): check it with a run on more GPUs.");
  }
  work.parallel_fraction = p;
  double sm = request.sm_mean_pct;
  if (sm < 0) {
    sm = 100;
    notes.push_back(
        "Device speed: SM utilization unknown, taken as 100%: all of the run time "
        "scales with the GPU's speed.");
  } else {
    sm = std::min(sm, 100.0);
    notes.push_back("Device speed: only the busy share of the run (mean SM " + Fixed(sm, 0) +
                    "%) scales with the GPU's relative speed from the GPU catalog (V100 = 1.0, " +
                    measured.name + " = " + Fixed(measured.relative_speed, 2) +
                    "); the rest (input pipeline, host) keeps its time on any GPU.");
  }
  work.busy = sm / 100.0;
  work.single_gpu_hours = run_hours * AmdahlSpeedup(p, request.gpus);
  return work;
}

// Adds the options on `m` for 1..max_gpus GPUs, its break-even, and its placeholder rows.
void SizeModel(const ModelPrices& m, const core::GpuModel& model, const Work& work, int max_gpus,
               const OwnHardware& own, const SizingOptions& options, Sizing& out,
               std::vector<std::string>& placeholders) {
  const double one_gpu = work.single_gpu_hours *
                         (work.busy * work.measured_speed / model.relative_speed + (1 - work.busy));
  std::optional<OwnGpuHourCost> own_cost;
  if (m.purchase) own_cost = OwnCostPerGpuHour(m.purchase->usd, m.purchase->tdp_w, own);
  for (int n = 1; n <= max_gpus; ++n) {
    const double hours = one_gpu / AmdahlSpeedup(work.parallel_fraction, n);
    if (own_cost) {
      out.options.push_back(SizingOption{model.name, n, hours, hours * n * own_cost->at_target,
                                         "own", "own " + m.purchase->offer,
                                         m.purchase->placeholder});
    }
    if (auto o = CheapestRental(m.on_demand, model.name, n, hours, "on-demand"))
      out.options.push_back(std::move(*o));
    if (auto o =
            CheapestRental(m.spot, model.name, n, hours * (1 + options.spot_extra_time), "spot"))
      out.options.push_back(std::move(*o));
  }
  if (own_cost && !m.on_demand.empty()) {
    double cheapest = m.on_demand.front()->usd_per_gpu_hour();
    for (const PriceRow* row : m.on_demand) cheapest = std::min(cheapest, row->usd_per_gpu_hour());
    out.break_even.push_back(BreakEven{model.name, cheapest, own_cost->fixed_usd_per_year,
                                       own_cost->power_usd_per_hour,
                                       BreakEvenUtilization(*own_cost, cheapest)});
  }
  auto note_placeholder = [&](const PriceRow* row) {
    if (row->placeholder)
      placeholders.push_back(model.name + " " + std::string(PriceKindName(row->kind)) + " " +
                             row->provider + " " + row->offer);
  };
  if (m.purchase) note_placeholder(m.purchase);
  for (const PriceRow* row : m.on_demand) note_placeholder(row);
  for (const PriceRow* row : m.spot) note_placeholder(row);
}

void DescribeCosts(const OwnHardware& own, const SizingOptions& options,
                   const std::vector<std::string>& placeholders,
                   const std::vector<std::string>& unknown, std::vector<std::string>& notes) {
  notes.push_back(
      "Cloud: list prices per instance-hour from the price table (each row has its "
      "source and date); whole instances are billed, so n GPUs of an 8-GPU instance "
      "pay for 8. Storage, network egress, minimum terms and taxes are not counted.");
  notes.push_back(
      "Spot: prices vary by the hour, region and zone, and the table holds one "
      "reading each, some old; preemptions add " +
      Fixed(options.spot_extra_time * 100, 0) + "% to the run time.");
  notes.push_back(
      "Own: per GPU-hour used = (purchase + $" + Fixed(own.server_overhead_usd_per_gpu, 0) +
      " server share) x (1 / " + Fixed(own.lifetime_years, 1) + " years + " +
      Fixed(own.ops_share * 100, 0) + "% operations a year) / (8760 h x " +
      Fixed(own.utilization_target * 100, 0) + "% utilization) + (board power + " +
      Fixed(own.server_overhead_watts_per_gpu, 0) + " W server share) x PUE " + Fixed(own.pue, 2) +
      " x $" + Fixed(own.electricity_usd_per_kwh, 3) +
      "/kWh, power at full board power while the job runs. The hardware is assumed to be there "
      "and used at the target utilization by other jobs too, not bought for this job alone.");
  notes.push_back(
      "Break-even: owning beats on-demand above utilization u = fixed cost a year / "
      "(8760 h x (cheapest on-demand price per GPU-hour - power cost per hour)).");
  if (!placeholders.empty()) {
    std::string line = "Placeholder prices (no public source found; replace them):";
    for (size_t i = 0; i < placeholders.size(); ++i)
      line += (i == 0 ? " " : "; ") + placeholders[i];
    notes.push_back(line + ".");
  }
  if (!unknown.empty()) {
    std::string line = "Price rows for models not in the GPU catalog were skipped:";
    for (size_t i = 0; i < unknown.size(); ++i) line += (i == 0 ? " " : ", ") + unknown[i];
    notes.push_back(line + ".");
  }
}

// Picks the cheapest option within the deadline (options are sorted cheapest first).
void Recommend(const std::optional<double>& deadline_hours, Sizing& out) {
  auto& notes = out.assumptions;
  if (out.options.empty()) {
    out.deadline_met = !deadline_hours;
    notes.push_back("No GPU model of the catalog has a price: nothing to compare.");
    return;
  }
  for (const SizingOption& o : out.options) {
    if (!deadline_hours || o.est_hours <= *deadline_hours * (1 + 1e-12)) {
      out.recommended = o;
      break;
    }
  }
  if (!deadline_hours) {
    notes.push_back("No deadline: the cheapest option is " + Describe(*out.recommended) + ".");
  } else if (out.recommended) {
    notes.push_back("Deadline " + Fixed(*deadline_hours, 2) +
                    " h: the cheapest option that meets it is " + Describe(*out.recommended) + ".");
  } else {
    const SizingOption& quickest = *std::min_element(
        out.options.begin(), out.options.end(), [](const SizingOption& a, const SizingOption& b) {
          return std::tie(a.est_hours, a.cost_usd) < std::tie(b.est_hours, b.cost_usd);
        });
    out.deadline_met = false;
    notes.push_back("Deadline " + Fixed(*deadline_hours, 2) +
                    " h: no option meets it; the quickest is " + Describe(quickest) + ".");
  }
  if (out.recommended && out.recommended->placeholder_price)
    notes.push_back("The recommended option rests on a placeholder price: check it first.");
}

}  // namespace

core::Result<Sizing> Size(const SizingRequest& request, const core::GpuCatalog& catalog,
                          const PriceTable& prices, const OwnHardware& own,
                          const SizingOptions& options) {
  if (auto error = Validate(request, catalog, options)) return std::move(*error);
  Sizing out;
  const core::GpuModel& measured = catalog.model(*catalog.Find(request.model));
  const Work work = DescribeWork(request, measured, options, out.assumptions);
  std::vector<std::string> unknown, placeholders;
  const int max_gpus = std::max(options.max_gpus, request.gpus);
  for (const ModelPrices& m : GroupPrices(catalog, prices, unknown))
    SizeModel(m, catalog.model(m.id), work, max_gpus, own, options, out, placeholders);
  std::sort(out.options.begin(), out.options.end(), Before);
  DescribeCosts(own, options, placeholders, unknown, out.assumptions);
  Recommend(request.deadline_hours, out);
  return out;
}

std::string SizingToJson(const Sizing& sizing) {
  auto option = [](const SizingOption& o) {
    return nlohmann::json{{"model", o.model},
                          {"gpus", o.gpus},
                          {"est_hours", o.est_hours},
                          {"cost", o.cost_usd},
                          {"where", o.where},
                          {"offer", o.offer},
                          {"placeholder_price", o.placeholder_price}};
  };
  nlohmann::json j;
  j["sizing"] = nlohmann::json::array();
  for (const SizingOption& o : sizing.options) j["sizing"].push_back(option(o));
  j["recommended"] = sizing.recommended ? option(*sizing.recommended) : nlohmann::json();
  j["deadline_met"] = sizing.deadline_met;
  j["break_even"] = nlohmann::json::array();
  for (const BreakEven& b : sizing.break_even) {
    j["break_even"].push_back(
        {{"model", b.model},
         {"utilization", b.utilization ? nlohmann::json(*b.utilization) : nlohmann::json()},
         {"on_demand_usd_per_gpu_hour", b.on_demand_usd_per_gpu_hour},
         {"own_fixed_usd_per_gpu_year", b.own_fixed_usd_per_gpu_year},
         {"own_power_usd_per_gpu_hour", b.own_power_usd_per_gpu_hour}});
  }
  j["assumptions"] = sizing.assumptions;
  return j.dump();
}

}  // namespace gpufleet::advise

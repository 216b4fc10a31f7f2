#include "advise/sizing.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

namespace gpufleet::advise {
namespace {

// Two models: FAST is four times SLOW; one-GPU instances, $1/h and $5/h.
core::GpuCatalog TwoModels() {
  return core::GpuCatalog::Parse(
             "name,memory_gib,relative_speed,hourly_price_usd\n"
             "SLOW,16,1.0,1\n"
             "FAST,80,4.0,5\n")
      .value();
}

constexpr std::string_view kHeader =
    "model,kind,provider,offer,gpus,usd,tdp_w,placeholder,date,source,note\n";

PriceTable Prices(std::string_view rows) {
  auto parsed = ParsePriceTable(std::string(kHeader) + std::string(rows));
  EXPECT_TRUE(parsed.ok()) << parsed.error();
  return std::move(parsed).value();
}

// 10 GPU-hours on one SLOW GPU, fully busy; Amdahl p = 0.5 (assumed: one GPU).
SizingRequest TenSlowHours() {
  SizingRequest r;
  r.gpu_hours = 10;
  r.model = "SLOW";
  r.gpus = 1;
  r.sm_mean_pct = 100;
  return r;
}

SizingOptions HalfParallel() {
  SizingOptions o;
  o.assumed_parallel_fraction = 0.5;
  return o;
}

bool HasLineWith(const Sizing& s, std::string_view text) {
  for (const auto& line : s.assumptions)
    if (line.find(text) != std::string::npos) return true;
  return false;
}

TEST(Amdahl, FitsTheMeasuredEfficiency) {
  EXPECT_DOUBLE_EQ(FitParallelFraction(1.0, 4), 1.0);
  EXPECT_DOUBLE_EQ(FitParallelFraction(0.25, 4), 0.0);  // 4 GPUs as fast as one
  EXPECT_DOUBLE_EQ(FitParallelFraction(1.5, 4), 1.0);   // superlinear: clamped
  EXPECT_DOUBLE_EQ(FitParallelFraction(0.1, 4), 0.0);   // slower than one GPU: clamped
  const double p = FitParallelFraction(0.8, 4);
  EXPECT_NEAR(p, 0.6875 / 0.75, 1e-12);
  EXPECT_NEAR(AmdahlSpeedup(p, 4), 3.2, 1e-12);
  EXPECT_DOUBLE_EQ(AmdahlSpeedup(p, 1), 1.0);
}

TEST(Amdahl, SpeedupNeverFallsWithMoreGpus) {
  for (double p : {0.0, 0.3, 0.5, 0.9, 0.99, 1.0}) {
    double last = 0;
    for (int n = 1; n <= 64; ++n) {
      const double s = AmdahlSpeedup(p, n);
      EXPECT_GE(s, last - 1e-12) << "p=" << p << " n=" << n;
      EXPECT_LE(s, n + 1e-12);
      last = s;
    }
  }
}

TEST(Size, EstimatedHoursNeverRiseWithMoreGpus) {
  SizingRequest r;
  r.gpu_hours = 64;
  r.model = "A100-80GB";
  r.gpus = 4;
  r.sm_mean_pct = 70;
  r.scaling_efficiency = 0.85;
  auto s = Size(r, core::GpuCatalog::Builtin(), BuiltinPriceTable(), OwnHardware{});
  ASSERT_TRUE(s.ok()) << s.error();
  std::map<std::pair<std::string, std::string>, std::map<int, double>> hours;
  for (const auto& o : s.value().options) hours[{o.model, o.where}][o.gpus] = o.est_hours;
  ASSERT_FALSE(hours.empty());
  for (const auto& [key, by_n] : hours) {
    EXPECT_EQ(by_n.size(), 8u) << key.first << " " << key.second;
    double last = 1e300;
    for (const auto& [n, h] : by_n) {
      EXPECT_LE(h, last) << key.first << " " << key.second << " n=" << n;
      last = h;
    }
  }
}

TEST(Size, RecommendsTheCheapestOptionWithoutADeadline) {
  const PriceTable prices = Prices(
      "SLOW,on-demand,c,slow-1,1,1,0,no,2026-01-01,test,\n"
      "FAST,on-demand,c,fast-1,1,5,0,no,2026-01-01,test,\n");
  auto s = Size(TenSlowHours(), TwoModels(), prices, OwnHardware{}, HalfParallel());
  ASSERT_TRUE(s.ok()) << s.error();
  ASSERT_TRUE(s.value().recommended);
  const SizingOption& best = *s.value().recommended;
  EXPECT_EQ(best.model, "SLOW");  // 10 h x $1 against 2.5 h x $5
  EXPECT_EQ(best.gpus, 1);
  EXPECT_EQ(best.where, "on-demand");
  EXPECT_NEAR(best.est_hours, 10, 1e-9);
  EXPECT_NEAR(best.cost_usd, 10, 1e-9);
  EXPECT_TRUE(s.value().deadline_met);
  EXPECT_EQ(s.value().options.front().cost_usd, best.cost_usd);
}

TEST(Size, PicksTheCheapestOptionThatMeetsTheDeadline) {
  const PriceTable prices = Prices(
      "SLOW,on-demand,c,slow-1,1,1,0,no,2026-01-01,test,\n"
      "FAST,on-demand,c,fast-1,1,5,0,no,2026-01-01,test,\n");
  SizingRequest r = TenSlowHours();
  // SLOW never gets under 5 h (p = 0.5: at best half of 10 h); FAST on one GPU takes 2.5 h.
  r.deadline_hours = 5;
  auto s = Size(r, TwoModels(), prices, OwnHardware{}, HalfParallel());
  ASSERT_TRUE(s.ok()) << s.error();
  ASSERT_TRUE(s.value().recommended);
  const SizingOption& best = *s.value().recommended;
  EXPECT_EQ(best.model, "FAST");
  EXPECT_EQ(best.gpus, 1);
  EXPECT_NEAR(best.est_hours, 2.5, 1e-9);
  EXPECT_NEAR(best.cost_usd, 12.5, 1e-9);
  EXPECT_TRUE(s.value().deadline_met);
  EXPECT_TRUE(HasLineWith(s.value(), "cheapest option that meets it is 1 x FAST"));
}

TEST(Size, SaysWhenNoOptionMeetsTheDeadline) {
  const PriceTable prices = Prices(
      "SLOW,on-demand,c,slow-1,1,1,0,no,2026-01-01,test,\n"
      "FAST,on-demand,c,fast-1,1,5,0,no,2026-01-01,test,\n");
  SizingRequest r = TenSlowHours();
  r.deadline_hours = 1;  // FAST never gets under 1.25 h
  auto s = Size(r, TwoModels(), prices, OwnHardware{}, HalfParallel());
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_FALSE(s.value().recommended);
  EXPECT_FALSE(s.value().deadline_met);
  EXPECT_FALSE(s.value().options.empty());
  EXPECT_TRUE(HasLineWith(s.value(), "no option meets it; the quickest is 8 x FAST"));
  const auto j = nlohmann::json::parse(SizingToJson(s.value()));
  EXPECT_TRUE(j["recommended"].is_null());
  EXPECT_FALSE(j["deadline_met"].get<bool>());
}

TEST(Size, BillsWholeInstances) {
  const PriceTable prices = Prices("SLOW,on-demand,c,slow-8,8,8,0,no,2026-01-01,test,\n");
  auto s = Size(TenSlowHours(), TwoModels(), prices, OwnHardware{}, HalfParallel());
  ASSERT_TRUE(s.ok()) << s.error();
  for (const auto& o : s.value().options) {
    EXPECT_NEAR(o.cost_usd, 8 * o.est_hours, 1e-9) << o.gpus;  // one 8-GPU instance, always
  }
}

TEST(Size, OnlyTheBusyShareScalesWithDeviceSpeed) {
  const PriceTable prices = Prices("FAST,on-demand,c,fast-1,1,5,0,no,2026-01-01,test,\n");
  SizingRequest r = TenSlowHours();
  r.sm_mean_pct = 50;  // 5 h busy (4x faster: 1.25 h) and 5 h of input wait
  auto s = Size(r, TwoModels(), prices, OwnHardware{}, HalfParallel());
  ASSERT_TRUE(s.ok()) << s.error();
  bool seen = false;
  for (const auto& o : s.value().options) {
    if (o.gpus != 1) continue;
    EXPECT_NEAR(o.est_hours, 6.25, 1e-9);
    seen = true;
  }
  EXPECT_TRUE(seen);
}

// The break-even utilization, by hand: a $8760 GPU written off in one year is $8760 a year; it
// draws 1 kW at $0.50/kWh (PUE 1), so $0.50 an hour while used. Rented at $2.50 an hour, owning
// wins above 8760 / (8760 x (2.50 - 0.50)) = 50% of the hours.
TEST(BreakEven, MatchesTheHandComputation) {
  OwnHardware own;
  own.lifetime_years = 1;
  own.electricity_usd_per_kwh = 0.5;
  own.pue = 1;
  own.ops_share = 0;
  own.utilization_target = 0.5;
  own.server_overhead_usd_per_gpu = 0;
  own.server_overhead_watts_per_gpu = 0;
  const OwnGpuHourCost cost = OwnCostPerGpuHour(8760, 1000, own);
  EXPECT_NEAR(cost.fixed_usd_per_year, 8760, 1e-9);
  EXPECT_NEAR(cost.power_usd_per_hour, 0.5, 1e-12);
  EXPECT_NEAR(cost.at_target, 8760 / (8760 * 0.5) + 0.5, 1e-12);  // 2.50: the break-even
  auto u = BreakEvenUtilization(cost, 2.5);
  ASSERT_TRUE(u);
  EXPECT_NEAR(*u, 0.5, 1e-12);
  EXPECT_FALSE(BreakEvenUtilization(cost, 0.5));  // renting costs no more than the power
  EXPECT_FALSE(BreakEvenUtilization(cost, 0.4));

  // The same through Size, with operations, a server share and PUE: capital 8000 + 760 over
  // 2 years plus 50% a year is 8760 a year; power (900 + 100) W x PUE 1.25 x $0.40 = $0.50/h.
  own.lifetime_years = 2;
  own.ops_share = 0.5;
  own.server_overhead_usd_per_gpu = 760;
  own.server_overhead_watts_per_gpu = 100;
  own.pue = 1.25;
  own.electricity_usd_per_kwh = 0.4;
  const PriceTable prices = Prices(
      "SLOW,purchase,m,card,1,8000,900,no,2026-01-01,test,\n"
      "SLOW,on-demand,c,slow-8,8,20,0,no,2026-01-01,test,\n");  // $2.50 per GPU-hour
  auto s = Size(TenSlowHours(), TwoModels(), prices, own, HalfParallel());
  ASSERT_TRUE(s.ok()) << s.error();
  ASSERT_EQ(s.value().break_even.size(), 1u);
  const BreakEven& b = s.value().break_even[0];
  EXPECT_EQ(b.model, "SLOW");
  EXPECT_NEAR(b.on_demand_usd_per_gpu_hour, 2.5, 1e-12);
  EXPECT_NEAR(b.own_fixed_usd_per_gpu_year, 8760, 1e-9);
  EXPECT_NEAR(b.own_power_usd_per_gpu_hour, 0.5, 1e-12);
  ASSERT_TRUE(b.utilization);
  EXPECT_NEAR(*b.utilization, 0.5, 1e-12);
  // Own, one GPU, 10 h at the target utilization (50%): $2.50 an hour.
  bool own_seen = false;
  for (const auto& o : s.value().options) {
    if (o.where != "own" || o.gpus != 1) continue;
    EXPECT_NEAR(o.cost_usd, 25, 1e-9);
    own_seen = true;
  }
  EXPECT_TRUE(own_seen);
}

TEST(Size, RejectsABadRequestNamingTheField) {
  const PriceTable prices = Prices("SLOW,on-demand,c,slow-1,1,1,0,no,2026-01-01,test,\n");
  SizingRequest r = TenSlowHours();
  r.model = "K9000";
  auto s = Size(r, TwoModels(), prices, OwnHardware{});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.failure().field, "model");
  r = TenSlowHours();
  r.gpu_hours = 0;
  EXPECT_EQ(Size(r, TwoModels(), prices, OwnHardware{}).failure().field, "gpu_hours");
  r = TenSlowHours();
  r.deadline_hours = -1;
  EXPECT_EQ(Size(r, TwoModels(), prices, OwnHardware{}).failure().field, "deadline_hours");
  r = TenSlowHours();
  r.scaling_efficiency = 0;
  EXPECT_EQ(Size(r, TwoModels(), prices, OwnHardware{}).failure().field, "scaling_efficiency");
}

TEST(Size, WithTheBuiltinTablesGivesJsonWithAssumptions) {
  SizingRequest r;
  r.gpu_hours = 200;
  r.model = "V100-SXM2-16GB";  // an alias
  r.gpus = 8;
  r.sm_mean_pct = 60;
  r.scaling_efficiency = 0.7;
  r.deadline_hours = 24;
  auto s = Size(r, core::GpuCatalog::Builtin(), BuiltinPriceTable(), OwnHardware{});
  ASSERT_TRUE(s.ok()) << s.error();
  ASSERT_TRUE(s.value().recommended);
  EXPECT_LE(s.value().recommended->est_hours, 24);
  if (std::getenv("SIZING_DUMP")) std::printf("%s\n", SizingToJson(s.value()).c_str());
  EXPECT_FALSE(s.value().break_even.empty());
  EXPECT_TRUE(HasLineWith(s.value(), "Placeholder prices"));
  EXPECT_TRUE(HasLineWith(s.value(), "fitted to the measured efficiency 0.70 at 8 GPUs"));
  const auto j = nlohmann::json::parse(SizingToJson(s.value()));
  ASSERT_TRUE(j["sizing"].is_array());
  ASSERT_FALSE(j["sizing"].empty());
  for (const char* key : {"model", "gpus", "est_hours", "cost", "where"})
    EXPECT_TRUE(j["sizing"][0].contains(key)) << key;
  EXPECT_TRUE(j["assumptions"].is_array());
  EXPECT_TRUE(j["break_even"][0].contains("utilization"));
}

TEST(EstimateScalingEfficiency, IsTheMeanBusyShareOverTheLargest) {
  JobUsage u;
  for (int i = 0; i < 4; ++i) {
    GpuTotal g;
    g.node = "n1";
    g.index = i;
    g.samples = 100;
    g.busy_samples = i == 3 ? 30 : 90;  // one straggler
    u.gpus.push_back(g);
  }
  auto e = EstimateScalingEfficiency(u);
  ASSERT_TRUE(e);
  EXPECT_NEAR(*e, (0.9 * 3 + 0.3) / 4 / 0.9, 1e-12);
  u.gpus[3].samples = 0;  // never read: left out
  EXPECT_NEAR(*EstimateScalingEfficiency(u), 1.0, 1e-12);
  u.gpus.resize(1);
  EXPECT_FALSE(EstimateScalingEfficiency(u));  // one GPU says nothing
  EXPECT_FALSE(EstimateScalingEfficiency(JobUsage{}));
}

TEST(PriceTable, BuiltinRowsNameCatalogModelsAndSayWhereTheyCameFrom) {
  const PriceTable& table = BuiltinPriceTable();
  ASSERT_FALSE(table.rows.empty());
  for (const PriceRow& row : table.rows) {
    EXPECT_TRUE(core::GpuCatalog::Builtin().Find(row.model)) << row.model;
    if (row.placeholder) {
      EXPECT_EQ(row.source.rfind("placeholder", 0), 0u) << row.model << " " << row.offer;
    } else {
      EXPECT_NE(row.source.rfind("placeholder", 0), 0u) << row.model << " " << row.offer;
    }
  }
}

TEST(PriceTable, ErrorsNameTheLineAndColumn) {
  auto bad = ParsePriceTable(std::string(kHeader) +
                             "SLOW,on-demand,c,x,1,1,0,no,2026,test,\n"
                             "SLOW,rent,c,x,1,1,0,no,2026,test,\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("line 3, column kind"), std::string::npos) << bad.error();
  bad = ParsePriceTable(std::string(kHeader) + "SLOW,spot,c,x,0,1,0,no,2026,test,\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("line 2, column gpus"), std::string::npos) << bad.error();
  bad = ParsePriceTable(std::string(kHeader) + "SLOW,purchase,m,x,1,100,0,no,2026,test,\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("column tdp_w"), std::string::npos) << bad.error();
  bad = ParsePriceTable("model,kind\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("line 1: expected header"), std::string::npos) << bad.error();
}

}  // namespace
}  // namespace gpufleet::advise

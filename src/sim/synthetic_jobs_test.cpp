#include "sim/synthetic_jobs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace gpufleet::sim {
namespace {

double OfferedLoad(const std::vector<TraceJob>& jobs, int64_t cluster_gpus) {
  double gpu_s = 0;
  for (const TraceJob& j : jobs) gpu_s += static_cast<double>(j.duration_s) * j.num_gpus;
  const double span = static_cast<double>(jobs.back().submit_s - jobs.front().submit_s);
  return gpu_s / span / static_cast<double>(cluster_gpus);
}

TEST(SyntheticJobs, OffersTheAskedLoadAndIsDeterministic) {
  for (const char* durations : {"heavy", "bimodal", "narrow", "pareto"}) {
    SyntheticJobsSpec spec;
    spec.durations = durations;
    spec.jobs = 20000;
    spec.load = 0.8;
    auto a = GenerateSyntheticJobs(spec);
    ASSERT_TRUE(a.ok()) << a.error();
    auto b = GenerateSyntheticJobs(spec);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(SyntheticJobsCsv(a.value()), SyntheticJobsCsv(b.value())) << durations;
    EXPECT_NEAR(OfferedLoad(a.value(), spec.cluster_gpus), 0.8, 0.05) << durations;
    EXPECT_TRUE(std::is_sorted(a.value().begin(), a.value().end(), [](const TraceJob& x, const TraceJob& y) {
      return x.submit_s < y.submit_s;
    }));
    spec.seed = 2;
    auto c = GenerateSyntheticJobs(spec);
    ASSERT_TRUE(c.ok());
    EXPECT_NE(SyntheticJobsCsv(a.value()), SyntheticJobsCsv(c.value())) << durations;
  }
}

TEST(SyntheticJobs, ShapesDiffer) {
  auto median_run = [](const char* durations) {
    SyntheticJobsSpec spec;
    spec.durations = durations;
    spec.jobs = 5000;
    spec.queues = 1;  // the shape alone, without the VCs' factors
    auto jobs = GenerateSyntheticJobs(spec);
    EXPECT_TRUE(jobs.ok());
    std::vector<int64_t> runs;
    for (const TraceJob& j : jobs.value()) runs.push_back(j.duration_s);
    std::sort(runs.begin(), runs.end());
    return std::pair{runs[runs.size() / 2], runs[runs.size() * 99 / 100]};
  };
  const auto narrow = median_run("narrow");
  const auto heavy = median_run("heavy");
  // narrow: the 99th percentile within 2x of the median; heavy: far beyond.
  EXPECT_LT(narrow.second, 2 * narrow.first);
  EXPECT_GT(heavy.second, 50 * heavy.first);
}

TEST(SyntheticJobs, SizeMixes) {
  SyntheticJobsSpec spec;
  spec.sizes = "small";
  spec.jobs = 10000;
  auto jobs = GenerateSyntheticJobs(spec);
  ASSERT_TRUE(jobs.ok());
  std::map<int, int> count;
  for (const TraceJob& j : jobs.value()) ++count[j.num_gpus];
  EXPECT_EQ(count.count(16) + count.count(32), 0U);
  EXPECT_NEAR(count[1] / 10000.0, 0.70, 0.03);
  spec.sizes = "large";
  spec.cluster_gpus = 16;  // no job asks more than the cluster has
  jobs = GenerateSyntheticJobs(spec);
  ASSERT_TRUE(jobs.ok());
  for (const TraceJob& j : jobs.value()) EXPECT_LE(j.num_gpus, 16);
}

TEST(SyntheticJobs, BadSpecsNameTheField) {
  SyntheticJobsSpec spec;
  spec.durations = "uniform";
  EXPECT_NE(GenerateSyntheticJobs(spec).error().find("durations"), std::string::npos);
  spec = {};
  spec.sizes = "huge";
  EXPECT_NE(GenerateSyntheticJobs(spec).error().find("sizes"), std::string::npos);
  spec = {};
  spec.load = 0;
  EXPECT_NE(GenerateSyntheticJobs(spec).error().find("load"), std::string::npos);
  spec = {};
  spec.jobs = 0;
  EXPECT_NE(GenerateSyntheticJobs(spec).error().find("jobs"), std::string::npos);
}

}  // namespace
}  // namespace gpufleet::sim

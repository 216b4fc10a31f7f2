#include "advise/advisor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "advise/usage_json.h"

namespace gpufleet::advise {
namespace {

// A healthy minute: well-fed GPUs, a calm host.
UsageBucket Healthy(int minute, double gpus) {
  UsageBucket b;
  b.start_ms = minute * kBucketMs;
  b.sm_mean = 88, b.sm_min = 70, b.sm_max = 99;
  b.membw_pct = 45, b.fb_used_pct = 70, b.pcie_mb_s = 800, b.power_pct = 75;
  b.throttled_pct = 0, b.active_gpus = static_cast<float>(gpus);
  b.cpu_used_pct = 60, b.cpu_throttled_pct = 2, b.cpu_pressure_pct = 5;
  b.io_pressure_pct = 1, b.mem_pressure_pct = -1, b.mem_used_pct = 50, b.io_mb_s = 20;
  return b;
}

// `minutes` minutes of `gpus` GPUs on one node; `edit` changes each minute, `gpu_sm` gives each
// GPU's life-long mean SM (default: the buckets' mean).
struct Job {
  int minutes = 60;
  int gpus = 1;
  int nodes = 1;
  std::function<void(UsageBucket&)> edit = [](UsageBucket&) {};
  std::function<double(int)> gpu_sm = nullptr;  // by GPU number
  int64_t mem_peak_mib = 50'000;
  int64_t oom_kills = 0;
  int64_t cpu_alloc_milli = 8000, mem_alloc_mib = 65'536;
};

JobUsage Make(const Job& job) {
  JobUsage u;
  u.host_source = core::UsageSource::kCgroupV1;
  u.cpu_alloc_milli = job.cpu_alloc_milli;
  u.mem_alloc_mib = job.mem_alloc_mib;
  u.oom_kills = job.oom_kills;
  double sm_sum = 0;
  for (int m = 0; m < job.minutes; ++m) {
    UsageBucket b = Healthy(m, job.gpus);
    job.edit(b);
    sm_sum += b.sm_mean;
    u.buckets.push_back(b);
  }
  for (int g = 0; g < job.gpus; ++g) {
    GpuTotal t;
    t.node = "node-" + std::string(1, static_cast<char>('a' + g * job.nodes / job.gpus));
    t.index = g % (job.gpus / job.nodes);
    t.samples = job.minutes * 60;
    const double sm = job.gpu_sm ? job.gpu_sm(g) : sm_sum / job.minutes;
    t.sm_sum = sm * static_cast<double>(t.samples);
    t.busy_samples = sm > 5 ? t.samples : 0;
    t.mem_peak_mib = sm > 5 ? job.mem_peak_mib : 0;
    t.mem_total_mib = 81'559;
    u.gpus.push_back(t);
  }
  return u;
}

JobFacts Facts(const Job& job) {
  JobFacts f;
  f.gpus = job.gpus;
  f.nodes = job.nodes;
  f.cpu_milli = job.cpu_alloc_milli;
  f.memory_mib = job.mem_alloc_mib;
  f.run_ms = job.minutes * kBucketMs;
  f.ended = true;
  return f;
}

std::vector<FindingKind> Kinds(const std::vector<Finding>& findings) {
  std::vector<FindingKind> out;
  for (const Finding& f : findings) out.push_back(f.kind);
  return out;
}

struct Case {
  const char* name;
  Job job;
  FindingKind top;
};

// One row per finding kind: the scenario, and the finding that must come first.
std::vector<Case> Cases() {
  std::vector<Case> cases;
  cases.push_back({"healthy", Job{}, FindingKind::kEfficient});
  cases.push_back({"notebook left open",
                   Job{.minutes = 90,
                       .edit =
                           [](UsageBucket& b) {
                             if (b.start_ms >= 20 * kBucketMs)
                               b.sm_mean = b.sm_min = b.sm_max = 0, b.active_gpus = 0;
                           }},
                   FindingKind::kIdle});
  cases.push_back({"one of four GPUs",
                   Job{.gpus = 4,
                       .edit = [](UsageBucket& b) { b.sm_mean = 22, b.active_gpus = 1; },
                       .gpu_sm = [](int g) { return g == 0 ? 88.0 : 0.0; }},
                   FindingKind::kUnusedGpus});
  cases.push_back({"CPU-bound loader",
                   Job{.gpus = 2,
                       .edit =
                           [](UsageBucket& b) {
                             b.sm_mean = 30, b.sm_min = 0, b.sm_max = 95;
                             b.cpu_used_pct = 98, b.cpu_throttled_pct = 60;
                           }},
                   FindingKind::kInputBoundCpu});
  cases.push_back(
      {"I/O-bound loader",
       Job{.edit =
               [](UsageBucket& b) { b.sm_mean = 20, b.cpu_used_pct = 10, b.io_pressure_pct = 70; }},
       FindingKind::kInputBoundIo});
  cases.push_back({"PCIe-bound",
                   Job{.edit = [](UsageBucket& b) { b.sm_mean = 35, b.pcie_mb_s = 12'000; }},
                   FindingKind::kTransferBound});
  cases.push_back({"small batch",
                   Job{.edit = [](UsageBucket& b) { b.sm_mean = 45, b.fb_used_pct = 12; }},
                   FindingKind::kUnderBatched});
  cases.push_back({"GPU memory full",
                   Job{.edit = [](UsageBucket& b) { b.sm_mean = 30, b.fb_used_pct = 99; }},
                   FindingKind::kMemoryBound});
  cases.push_back({"OOM kill", Job{.oom_kills = 2}, FindingKind::kMemoryBound});
  cases.push_back({"power capped",
                   Job{.gpus = 4, .edit = [](UsageBucket& b) { b.throttled_pct = 60; }},
                   FindingKind::kThrottled});
  cases.push_back({"slow node",
                   Job{.gpus = 8, .nodes = 2, .gpu_sm = [](int g) { return g < 4 ? 88.0 : 50.0; }},
                   FindingKind::kImbalance});
  cases.push_back({"8 CPUs for 1",
                   Job{.edit = [](UsageBucket& b) { b.cpu_used_pct = 8, b.mem_used_pct = 5; }},
                   FindingKind::kOverRequestedHost});
  return cases;
}

TEST(Advisor, NamesTheBottleneckOfEachScenarioFirst) {
  for (const Case& c : Cases()) {
    const auto findings = Advise(Make(c.job), Facts(c.job));
    ASSERT_FALSE(findings.empty()) << c.name;
    EXPECT_EQ(FindingKindName(findings[0].kind), FindingKindName(c.top))
        << c.name << ": " << findings[0].summary;
    for (const Finding& f : findings) {
      EXPECT_FALSE(f.summary.empty()) << c.name;
      EXPECT_GE(f.waste_gpu_h, 0) << c.name;
      if (f.kind != FindingKind::kEfficient) {
        EXPECT_FALSE(f.evidence.empty()) << c.name;
        EXPECT_GE(f.advice.size(), 1u) << c.name;
        EXPECT_LE(f.advice.size(), 2u) << c.name;
      }
      for (const Evidence& e : f.evidence) EXPECT_LE(e.from_ms, e.to_ms) << c.name;
    }
  }
}

TEST(Advisor, EfficientOnlyWhenNothingElse) {
  for (const Case& c : Cases()) {
    const auto kinds = Kinds(Advise(Make(c.job), Facts(c.job)));
    const auto efficient = std::count(kinds.begin(), kinds.end(), FindingKind::kEfficient);
    EXPECT_EQ(efficient, c.top == FindingKind::kEfficient ? 1 : 0) << c.name;
    if (efficient == 1) {
      EXPECT_EQ(kinds.size(), 1u) << c.name;
    }
  }
}

TEST(Advisor, SortsWorstWasteFirst) {
  // Idle for an hour on 4 GPUs (4 GPU-h) outweighs one unused GPU over the half hour of work.
  Job job{.minutes = 90, .gpus = 4, .edit = [](UsageBucket& b) {
            if (b.start_ms >= 30 * kBucketMs) {
              b.sm_mean = b.sm_min = b.sm_max = 0, b.active_gpus = 0;
            } else {
              b.sm_mean = 66, b.active_gpus = 3;
            }
          }};
  job.gpu_sm = [](int g) { return g == 3 ? 0.0 : 30.0; };
  const auto findings = Advise(Make(job), Facts(job));
  ASSERT_GE(findings.size(), 2u);
  EXPECT_EQ(findings[0].kind, FindingKind::kIdle);
  EXPECT_NEAR(findings[0].waste_gpu_h, 4.0, 1e-9);
  EXPECT_EQ(findings[1].kind, FindingKind::kUnusedGpus);
  EXPECT_NEAR(findings[1].waste_gpu_h, 0.5, 1e-9);
  EXPECT_EQ(findings[0].severity, Severity::kCritical);  // 4 of 6 GPU-h
  for (std::size_t i = 1; i < findings.size(); ++i) {
    EXPECT_GE(findings[i - 1].waste_gpu_h, findings[i].waste_gpu_h);
  }
}

TEST(Advisor, IdleStretchesShorterThanTheThresholdAreNotIdle) {
  // Nine idle minutes (a checkpoint save, an evaluation) are below the ten-minute threshold.
  Job job{.minutes = 60, .edit = [](UsageBucket& b) {
            if (b.start_ms >= 20 * kBucketMs && b.start_ms < 29 * kBucketMs) {
              b.sm_mean = b.sm_min = b.sm_max = 0, b.active_gpus = 0;
            }
          }};
  EXPECT_EQ(Kinds(Advise(Make(job), Facts(job))), std::vector{FindingKind::kEfficient});
  AdviseOptions shorter;
  shorter.idle_min_ms = 5 * kBucketMs;
  EXPECT_EQ(Advise(Make(job), Facts(job), shorter)[0].kind, FindingKind::kIdle);
}

TEST(Advisor, ThrottlingIsForTheAdminsAndNamesTheNode) {
  Job job{.gpus = 2, .edit = [](UsageBucket& b) { b.throttled_pct = 80; }};
  const auto findings = Advise(Make(job), Facts(job));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_TRUE(findings[0].for_admins);
  EXPECT_EQ(findings[0].node, "node-a");
  EXPECT_NE(findings[0].summary.find("node-a"), std::string::npos);
}

TEST(Advisor, ImbalanceNamesTheLaggingNode) {
  Job job{.gpus = 12, .nodes = 3, .gpu_sm = [](int g) { return g >= 8 ? 45.0 : 90.0; }};
  const auto findings = Advise(Make(job), Facts(job));
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].kind, FindingKind::kImbalance);
  EXPECT_EQ(findings[0].node, "node-c");
  // 4 GPUs half as busy as the rest for an hour.
  EXPECT_NEAR(findings[0].waste_gpu_h, 4 * 0.5, 1e-9);
}

TEST(Advisor, ASmallSpreadIsNoImbalance) {
  Job job{.gpus = 8, .gpu_sm = [](int g) { return 80.0 + g; }};
  EXPECT_EQ(Kinds(Advise(Make(job), Facts(job))), std::vector{FindingKind::kEfficient});
}

TEST(Advisor, ChargesStarvedMinutesByTheShareTheSameWorkWouldNotNeed) {
  // SM 35% against the 70% good level: half of each GPU-minute is waste.
  Job job{.minutes = 60, .gpus = 2, .edit = [](UsageBucket& b) {
            b.sm_mean = 35, b.io_pressure_pct = 50;
          }};
  const auto findings = Advise(Make(job), Facts(job));
  ASSERT_EQ(findings[0].kind, FindingKind::kInputBoundIo);
  EXPECT_NEAR(findings[0].waste_gpu_h, 2 * 0.5 * 1.0, 1e-6);
  EXPECT_EQ(findings[0].severity, Severity::kCritical);
  bool has_io = false;
  for (const Evidence& e : findings[0].evidence) {
    if (e.figure == "io_pressure_pct") {
      has_io = true;
      EXPECT_NEAR(e.value, 50, 1e-6);
      EXPECT_EQ(e.from_ms, 0);
      EXPECT_EQ(e.to_ms, 60 * kBucketMs);
    }
  }
  EXPECT_TRUE(has_io);
}

TEST(Advisor, BriefDipsStayUnderTheWasteFloor) {
  // Two starved minutes in an hour cost under 5% of the job's GPU time.
  Job job{.edit = [](UsageBucket& b) {
    if (b.start_ms < 2 * kBucketMs) b.sm_mean = 10, b.io_pressure_pct = 90;
  }};
  EXPECT_EQ(Kinds(Advise(Make(job), Facts(job))), std::vector{FindingKind::kEfficient});
}

TEST(Advisor, UnexplainedLowUseIsNotCalledEfficientWork) {
  // Low SM with GPU memory half used and a calm host: no kind fits; the one finding says so.
  Job job{.edit = [](UsageBucket& b) { b.sm_mean = 40, b.fb_used_pct = 50; }};
  const auto findings = Advise(Make(job), Facts(job));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, FindingKind::kEfficient);
  EXPECT_NE(findings[0].summary.find("No bottleneck"), std::string::npos);
}

// The H200 run of bench/advise_load.cu (bench/results/real-gpu): host threads spin for each
// batch, the GPU runs a 5 ms kernel between them. SM read 0.5%, the context held 774 MiB, the node
// had no cgroup (usage from /proc: no throttling figure, run-queue wait ~0 on 16 cores) and the
// job used ~3.8 cores of the 1 it asked for. It was called "efficient": the near-zero minutes counted as idle, and
// the idle finding needs ten minutes.
Job StarvedToZero(int minutes) {
  Job job{.minutes = minutes, .edit = [](UsageBucket& b) {
            b.sm_mean = 0.5f, b.sm_min = 0, b.sm_max = 2, b.active_gpus = 0;
            b.fb_used_pct = 1, b.pcie_mb_s = 300;
            b.cpu_used_pct = 383, b.cpu_throttled_pct = -1, b.cpu_pressure_pct = 0;
            b.io_pressure_pct = -1;
          }};
  job.cpu_alloc_milli = 1000;
  job.mem_peak_mib = 774;
  return job;
}

TEST(Advisor, AJobStarvedToNearZeroSmByItsCpuIsInputBound) {
  const Job job = StarvedToZero(3);
  const auto findings = Advise(Make(job), Facts(job));
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].kind, FindingKind::kInputBoundCpu) << findings[0].summary;
  const auto kinds = Kinds(findings);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), FindingKind::kEfficient), 0);
  // Nearly all of the GPU time is waste.
  EXPECT_GT(findings[0].waste_gpu_h, 0.9 * 3 * kBucketMs / 3'600'000.0);
  EXPECT_NE(findings[0].summary.find("no CPU limit enforced"), std::string::npos)
      << findings[0].summary;
}

TEST(Advisor, WasteCountsTheShareHeldAndThePartOfTheLastMinuteRun) {
  // On H200 the job above ran 150 s on half a GPU: 3 buckets, the last one half covered. Its
  // waste was reported as 0.05 GPU-h against 0.042 allocated.
  const Job job = StarvedToZero(3);
  JobFacts facts = Facts(job);
  facts.run_ms = 150'000;
  facts.gpu_share = 0.5;
  const double allocated_h = 0.5 * 150.0 / 3600;
  const auto findings = Advise(Make(job), facts);
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].kind, FindingKind::kInputBoundCpu);
  EXPECT_LE(findings[0].waste_gpu_h, allocated_h + 1e-12);
  EXPECT_GT(findings[0].waste_gpu_h, 0.95 * allocated_h);
  EXPECT_EQ(findings[0].severity, Severity::kCritical);
  // The same share scales an idle job's waste.
  Job idle{.minutes = 30, .edit = [](UsageBucket& b) {
             b.sm_mean = b.sm_min = b.sm_max = 0, b.active_gpus = 0;
           }};
  JobFacts half = Facts(idle);
  half.gpu_share = 0.5;
  const auto idle_findings = Advise(Make(idle), half);
  ASSERT_FALSE(idle_findings.empty());
  EXPECT_EQ(idle_findings[0].kind, FindingKind::kIdle);
  EXPECT_NEAR(idle_findings[0].waste_gpu_h, 0.5 * 30.0 / 60, 1e-9);
}

TEST(Advisor, CpuSaturationCountsOnlyWhereThrottlingIsNotMeasured) {
  // The same job under a measured quota that never stopped it: the CPU figure alone is no cause.
  Job job = StarvedToZero(30);
  job.edit = [inner = job.edit](UsageBucket& b) {
    inner(b);
    b.cpu_used_pct = 90, b.cpu_throttled_pct = 1, b.cpu_pressure_pct = 2;
  };
  for (const Finding& f : Advise(Make(job), Facts(job))) {
    EXPECT_NE(f.kind, FindingKind::kInputBoundCpu) << f.summary;
  }
}

TEST(Advisor, AShortJobThatNeverRanAStepWasIdle) {
  Job job{.minutes = 3, .edit = [](UsageBucket& b) {
            b.sm_mean = b.sm_min = b.sm_max = 0, b.active_gpus = 0;
            b.cpu_used_pct = 1, b.fb_used_pct = 1;
          }};
  const auto ended = Advise(Make(job), Facts(job));
  ASSERT_FALSE(ended.empty());
  EXPECT_EQ(ended[0].kind, FindingKind::kIdle);
  // Still running: too early to tell a start-up from a job nobody drives, and nothing is praised.
  JobFacts running = Facts(job);
  running.ended = false;
  const auto now = Advise(Make(job), running);
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0].kind, FindingKind::kEfficient);
  EXPECT_EQ(now[0].summary.find("well"), std::string::npos) << now[0].summary;
  EXPECT_NE(now[0].summary.find("Too early"), std::string::npos) << now[0].summary;
}

TEST(Advisor, EfficientNeverPraisesSmBelowTheGoodLevel) {
  // Starved minutes at 40% SM from I/O, each cause under the 5% waste floor: no finding is
  // named, and the one left must not say the GPUs were used well.
  Job job{.minutes = 100, .edit = [](UsageBucket& b) {
            const int64_t m = b.start_ms / kBucketMs;
            if (m < 8) b.sm_mean = 40, b.io_pressure_pct = 50;
            else if (m < 16) b.sm_mean = 40, b.cpu_pressure_pct = 60;
            else if (m < 24) b.sm_mean = 40, b.pcie_mb_s = 9000;
            else b.sm_mean = 72;
          }};
  const auto findings = Advise(Make(job), Facts(job));
  ASSERT_EQ(findings.size(), 1u) << (findings.empty() ? "" : findings[0].summary);
  EXPECT_EQ(findings[0].kind, FindingKind::kEfficient);
  EXPECT_EQ(findings[0].summary.find("well"), std::string::npos) << findings[0].summary;
  EXPECT_NE(findings[0].summary.find("below the good level"), std::string::npos)
      << findings[0].summary;
}

TEST(Advisor, ACpuOnlyPhaseHoldingAGpuIsIdleNotInputBound) {
  // A notebook cell in pandas for half an hour: the CPU busy, the GPU never ran a kernel (SM 0 in
  // every sample). Releasing the GPU is the advice, not more DataLoader workers.
  Job job = StarvedToZero(30);
  job.edit = [inner = job.edit](UsageBucket& b) {
    inner(b);
    b.sm_mean = b.sm_min = b.sm_max = 0;
  };
  const auto findings = Advise(Make(job), Facts(job));
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].kind, FindingKind::kIdle) << findings[0].summary;
}

TEST(Advisor, AShareJobIsJudgedAgainstItsShare) {
  // Half a GPU at 40% of the whole GPU: 80% of its half, well fed.
  Job job{.minutes = 60, .edit = [](UsageBucket& b) { b.sm_mean = 40, b.fb_used_pct = 20; }};
  JobFacts half = Facts(job);
  half.gpu_share = 0.5;
  EXPECT_EQ(Kinds(Advise(Make(job), half)), std::vector{FindingKind::kEfficient});
  // The same on a whole GPU is under-batched.
  EXPECT_EQ(Advise(Make(job), Facts(job))[0].kind, FindingKind::kUnderBatched);
}

TEST(Advisor, MinutesWithoutAGpuReadingNeitherMakeNorBreakAnIdleRun) {
  Job job{.minutes = 4, .edit = [](UsageBucket& b) {
            b.sm_mean = b.sm_min = b.sm_max = 0, b.active_gpus = 0;
            if (b.start_ms == 3 * kBucketMs) b.sm_mean = b.sm_min = b.sm_max = -1, b.active_gpus = -1;
          }};
  const auto findings = Advise(Make(job), Facts(job));
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].kind, FindingKind::kIdle);
  // None measured at all: nothing to judge, and it says so.
  Job blind{.minutes = 3, .edit = [](UsageBucket& b) {
              b.sm_mean = b.sm_min = b.sm_max = -1, b.active_gpus = -1;
            }};
  const auto none = Advise(Make(blind), Facts(blind));
  ASSERT_EQ(none.size(), 1u);
  EXPECT_NE(none[0].summary.find("No GPU utilization was measured"), std::string::npos)
      << none[0].summary;
}

TEST(Advisor, NoUsageNoFinding) { EXPECT_TRUE(Advise(JobUsage{}, JobFacts{}).empty()); }

TEST(Advisor, OverRequestSuggestsWhatToAsk) {
  Job job{.edit = [](UsageBucket& b) { b.cpu_used_pct = 10, b.mem_used_pct = 4; }};
  const auto findings = Advise(Make(job), Facts(job));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, FindingKind::kOverRequestedHost);
  EXPECT_EQ(findings[0].waste_gpu_h, 0);
  ASSERT_EQ(findings[0].advice.size(), 2u);
  EXPECT_NE(findings[0].advice[0].find("Ask for about 1 CPUs"), std::string::npos)
      << findings[0].advice[0];
  EXPECT_NE(findings[0].advice[1].find("4 GiB"), std::string::npos) << findings[0].advice[1];
}

TEST(Advisor, KindNamesRoundTrip) {
  for (int i = 0; i <= static_cast<int>(FindingKind::kEfficient); ++i) {
    FindingKind k{};
    ASSERT_TRUE(ParseFindingKind(FindingKindName(static_cast<FindingKind>(i)), k));
    EXPECT_EQ(static_cast<int>(k), i);
  }
  FindingKind k{};
  EXPECT_FALSE(ParseFindingKind("slow", k));
}

TEST(UsageJson, RoundTrips) {
  Job job{.minutes = 3, .gpus = 2};
  const JobUsage u = Make(job);
  auto back = UsageFromJson(UsageToJson(u));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(UsageToJson(back.value()), UsageToJson(u));
  auto facts = FactsFromJson(FactsToJson(Facts(job)));
  ASSERT_TRUE(facts.ok());
  EXPECT_EQ(facts.value().gpus, 2);
  EXPECT_FALSE(UsageFromJson("[1]").ok());
  EXPECT_FALSE(
      UsageFromJson(R"({"host_source":"cgroup-v1","bucket_fields":["x"],"buckets":[],"gpus":[]})")
          .ok());
}

// ---- The labelled suite (src/advise/testdata, made by bench/advise_suite_record.cpp) ----

struct Labelled {
  std::string file, label, description;
  JobFacts facts;
  JobUsage usage;
};

std::vector<Labelled> ReadSuite() {
  std::vector<Labelled> out;
  const std::filesystem::path dir =
      std::filesystem::path(GPUFLEET_SOURCE_DIR) / "src/advise/testdata";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const auto j = nlohmann::json::parse(text.str());
    Labelled l;
    l.file = entry.path().filename().string();
    l.label = j.at("label").get<std::string>();
    l.description = j.at("description").get<std::string>();
    auto facts = FactsFromJson(j.at("facts").dump());
    auto usage = UsageFromJson(j.at("usage").dump());
    EXPECT_TRUE(facts.ok() && usage.ok()) << l.file;
    if (!facts.ok() || !usage.ok()) continue;
    l.facts = facts.value();
    l.usage = std::move(usage).value();
    out.push_back(std::move(l));
  }
  std::sort(out.begin(), out.end(),
            [](const Labelled& a, const Labelled& b) { return a.file < b.file; });
  return out;
}

TEST(AdvisorSuite, DiagnosesTheLabelledSuite) {
  const std::vector<Labelled> suite = ReadSuite();
  ASSERT_GE(suite.size(), 40u);
  std::map<std::string, std::map<std::string, int>> confusion;  // label -> top kind -> count
  int right = 0, healthy = 0, false_alarms = 0;
  for (const Labelled& l : suite) {
    FindingKind label{};
    ASSERT_TRUE(ParseFindingKind(l.label, label)) << l.file;
    const auto findings = Advise(l.usage, l.facts);
    ASSERT_FALSE(findings.empty()) << l.file;
    const std::string top(FindingKindName(findings[0].kind));
    ++confusion[l.label][top];
    if (top == l.label) {
      ++right;
    } else {
      std::printf("MISS %s: label %s, top %s: %s\n", l.file.c_str(), l.label.c_str(), top.c_str(),
                  findings[0].summary.c_str());
    }
    if (label == FindingKind::kEfficient) {
      ++healthy;
      if (findings[0].kind != FindingKind::kEfficient) ++false_alarms;
    }
  }
  // The confusion table, as docs/advise.md shows it.
  std::set<std::string> tops;
  for (const auto& [label, row] : confusion) {
    for (const auto& [top, n] : row) tops.insert(top);
  }
  std::printf("| label \\ top finding | n |");
  for (const std::string& t : tops) std::printf(" %s |", t.c_str());
  std::printf("\n|---|---|");
  for (std::size_t i = 0; i < tops.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (const auto& [label, row] : confusion) {
    int n = 0;
    for (const auto& [top, c] : row) n += c;
    std::printf("| %s | %d |", label.c_str(), n);
    for (const std::string& t : tops) {
      const auto it = row.find(t);
      std::printf(" %s |", it == row.end() ? "" : std::to_string(it->second).c_str());
    }
    std::printf("\n");
  }
  std::printf(
      "series %zu, kinds %zu, top finding right %d (%.1f%%), false alarms %d of %d healthy\n",
      suite.size(), confusion.size(), right, 100.0 * right / suite.size(), false_alarms, healthy);
  EXPECT_GE(confusion.size(), 8u);
  EXPECT_GE(right, 0.95 * static_cast<double>(suite.size()));
  ASSERT_GT(healthy, 0);
  EXPECT_LE(false_alarms, 0.05 * healthy);
}

// How the suite fares with one threshold moved: right top findings, and false alarms.
std::pair<int, int> Score(const std::vector<Labelled>& suite, const AdviseOptions& options,
                          std::string* missed = nullptr) {
  int right = 0, false_alarms = 0;
  for (const Labelled& l : suite) {
    const auto findings = Advise(l.usage, l.facts, options);
    if (findings.empty()) continue;
    const std::string top(FindingKindName(findings[0].kind));
    right += top == l.label ? 1 : 0;
    false_alarms += l.label == "efficient" && top != "efficient" ? 1 : 0;
    if (top != l.label && missed != nullptr) *missed += " " + l.file;
  }
  return {right, false_alarms};
}

// Not a pass/fail check: shows how far each threshold can move before the suite notices (the
// table in docs/advise.md). A threshold fitted to the suite would fall off at once.
TEST(AdvisorSuite, ThresholdSensitivity) {
  const std::vector<Labelled> suite = ReadSuite();
  ASSERT_FALSE(suite.empty());
  struct Knob {
    const char* name;
    double AdviseOptions::*field;
  };
  const Knob knobs[] = {
      {"idle_sm_pct", &AdviseOptions::idle_sm_pct},
      {"good_sm_pct", &AdviseOptions::good_sm_pct},
      {"min_waste_share", &AdviseOptions::min_waste_share},
      {"cpu_saturated_pct", &AdviseOptions::cpu_saturated_pct},
      {"cpu_throttled_pct", &AdviseOptions::cpu_throttled_pct},
      {"cpu_pressure_pct", &AdviseOptions::cpu_pressure_pct},
      {"io_stall_pct", &AdviseOptions::io_stall_pct},
      {"pcie_high_mb_s", &AdviseOptions::pcie_high_mb_s},
      {"gpu_mem_full_pct", &AdviseOptions::gpu_mem_full_pct},
      {"gpu_mem_small_pct", &AdviseOptions::gpu_mem_small_pct},
      {"throttled_share_pct", &AdviseOptions::throttled_share_pct},
      {"imbalance_ratio", &AdviseOptions::imbalance_ratio},
      {"over_cpu_used_pct", &AdviseOptions::over_cpu_used_pct},
  };
  std::printf(
      "| threshold | default | x0.75: right / false alarms | x1.25: right / false alarms |\n");
  std::printf("|---|---|---|---|\n");
  for (const Knob& k : knobs) {
    AdviseOptions lo, hi;
    lo.*(k.field) *= 0.75;
    hi.*(k.field) *= 1.25;
    if (std::string(k.name) == "gpu_mem_full_pct") hi.*(k.field) = 99.5;  // 100% is the ceiling
    std::string missed;
    const auto [lr, lf] = Score(suite, lo, &missed);
    const auto [hr, hf] = Score(suite, hi, &missed);
    if (!missed.empty()) std::printf("  %s missed:%s\n", k.name, missed.c_str());
    std::printf("| %s | %g | %d / %d | %d / %d |\n", k.name, AdviseOptions{}.*(k.field), lr, lf, hr,
                hf);
  }
  std::printf("(of %zu series)\n", suite.size());
}

}  // namespace
}  // namespace gpufleet::advise

// End-to-end tests of the `gpufleet` command line: determinism of `sim placement`, its JSON, and
// its errors on bad input. They run the built binary (GPUFLEET_BINARY) through the shell.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "sched/policy_registry.h"
#include "sched/queue_policy.h"
#include "testing/builders.h"

namespace gpufleet {
namespace {

struct Output {
  int status = -1;  // exit code
  std::string text;
};

// Runs `gpufleet ARGS` with the shell. `redirect` is appended, e.g. "2>&1" or "2>/dev/null";
// `env` ("NAME=value ...") is set for the command.
Output Gpufleet(const std::string& args, const std::string& redirect = "2>&1",
                const std::string& env = "") {
  std::string command = "env " + env + " '";
  command += GPUFLEET_BINARY;
  command += "' " + args + " " + redirect;
  Output out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot run " << command;
    return out;
  }
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.text.append(buffer, n);
  const int status = pclose(pipe);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A small openb-format workload: 46 nodes (232 GPUs) and 150 pods of the trace's shapes, asking
// for well under 130% of the GPUs, so the generated orders add clones.
std::string NodesCsv() {
  std::string csv = "sn,cpu_milli,memory_mib,gpu,model\n";
  for (int i = 0; i < 24; ++i) csv += "g2-" + std::to_string(i) + ",96000,393216,8,G2\n";
  for (int i = 0; i < 20; ++i) csv += "t4-" + std::to_string(i) + ",32000,131072,2,T4\n";
  for (int i = 0; i < 2; ++i) csv += "cpu-" + std::to_string(i) + ",64000,262144,0,\n";
  return csv;
}

std::string PodsCsv() {
  const char* shapes[] = {"4000,8192,0,0,",        "2000,4096,1,250,",    "4000,8192,1,500,",
                          "8000,16384,1,1000,",    "16000,32768,2,1000,", "6000,8192,1,300,T4",
                          "32000,65536,4,1000,G2", "1000,2048,1,100,"};
  std::string csv = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n";
  for (int i = 0; i < 150; ++i) {
    csv += "pod-" + std::to_string(i) + "," + shapes[(i * 5 + i / 8) % 8] + "\n";
  }
  return csv;
}

class CliTest : public ::testing::Test {
 protected:
  test::TempFile nodes_{"nodes.csv", NodesCsv()};
  test::TempFile pods_{"pods.csv", PodsCsv()};
  std::string Files() const {
    return "--nodes '" + nodes_.path() + "' --pods '" + pods_.path() + "'";
  }
};

TEST_F(CliTest, SameSeedGivesByteIdenticalJson) {
  const std::string args = "sim placement " + Files() + " --policy bestfit --json --seed 7";
  const Output a = Gpufleet(args, "2>/dev/null"), b = Gpufleet(args, "2>/dev/null");
  ASSERT_EQ(a.status, 0) << a.text;
  ASSERT_EQ(b.status, 0);
  EXPECT_EQ(a.text, b.text);
  const Output c =
      Gpufleet("sim placement " + Files() + " --policy bestfit --json --seed 8", "2>/dev/null");
  ASSERT_EQ(c.status, 0);
  EXPECT_NE(a.text, c.text) << "another seed, another arrival order";
}

TEST_F(CliTest, ThreadsDoNotChangeTheResult) {
  const std::string args = "sim placement " + Files() + " --policy fgd --json --seeds 3";
  const Output one = Gpufleet(args + " --threads 1", "2>/dev/null");
  const Output two = Gpufleet(args + " --threads 2", "2>/dev/null");
  ASSERT_EQ(one.status, 0) << one.text;
  EXPECT_EQ(one.text, two.text);
}

TEST_F(CliTest, DecisionLogIsByteIdentical) {
  test::TempFile log_a("a.csv", ""), log_b("b.csv", "");
  const std::string args = "sim placement " + Files() + " --policy gpupacking --seed 3";
  ASSERT_EQ(Gpufleet(args + " --decisions '" + log_a.path() + "'").status, 0);
  ASSERT_EQ(Gpufleet(args + " --decisions '" + log_b.path() + "'").status, 0);
  const std::string a = Slurp(log_a.path());
  EXPECT_EQ(a.rfind("event,pod,node,gpus\n0,pod-", 0), 0u) << a.substr(0, 80);
  EXPECT_GT(a.size(), 150u * 10);
  EXPECT_EQ(a, Slurp(log_b.path()));
}

// `gpufleet` runs `sim placement` itself (not gpufleet-full) on a huge-page heap; the heap changes
// nothing but speed, and a mistyped setting is said, not silently taken.
TEST_F(CliTest, HeapPagesChangeNothingAndAnUnknownSettingWarns) {
  const std::string args = "sim placement " + Files() + " --policy fgd-balance --json --seed 5";
  const Output huge = Gpufleet(args, "2>/dev/null");
  const Output small = Gpufleet(args, "2>/dev/null", "GPUFLEET_HEAP_PAGES=small");
  ASSERT_EQ(huge.status, 0) << huge.text;
  ASSERT_EQ(small.status, 0) << small.text;
  EXPECT_EQ(huge.text, small.text);
  const Output odd = Gpufleet(args, "2>&1 >/dev/null", "GPUFLEET_HEAP_PAGES=gigantic");
  EXPECT_EQ(odd.status, 0);
  EXPECT_NE(odd.text.find("GPUFLEET_HEAP_PAGES='gigantic' is neither 'small' nor 'huge'"),
            std::string::npos)
      << odd.text;
}

TEST_F(CliTest, JsonHasTheDocumentedKeys) {
  const Output out =
      Gpufleet("sim placement " + Files() + " --policy gpuclustering --json", "2>/dev/null");
  ASSERT_EQ(out.status, 0) << out.text;
  const nlohmann::json j = nlohmann::json::parse(out.text);
  EXPECT_EQ(j.at("policy"), "gpuclustering");
  for (const char* curve : {"allocation", "frag_ratio"}) {
    const auto& c = j.at(curve);
    ASSERT_TRUE(c.is_object()) << curve;
    EXPECT_EQ(c.size(), 131u) << curve;
    for (int x = 0; x <= 130; ++x) {
      ASSERT_TRUE(c.contains(std::to_string(x))) << curve << " " << x;
      const auto& v = c.at(std::to_string(x));
      EXPECT_TRUE(v.is_number()) << curve << " " << x;  // every 1% bucket has events
    }
  }
  // The cluster fills up: allocation rises and stays within 100%.
  const double at130 = j.at("allocation").at("130").get<double>();
  EXPECT_GT(at130, 50);
  EXPECT_LE(at130, 100);
  EXPECT_GE(j.at("failed").get<double>(), 1);
  EXPECT_GT(j.at("pods").get<double>(), 150);  // originals plus clones up to 130% demand
}

TEST_F(CliTest, MissingFileNamesIt) {
  const Output out =
      Gpufleet("sim placement --nodes '" + nodes_.path() + "' --pods /nonexistent/pods.csv");
  EXPECT_NE(out.status, 0);
  EXPECT_NE(out.text.find("/nonexistent/pods.csv: cannot open file"), std::string::npos)
      << out.text;
}

TEST_F(CliTest, BadCsvNamesFileLineAndColumn) {
  test::TempFile bad("bad-pods.csv",
                     "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,0,0,0\np1,10O0,0,0,0\n");
  const Output out =
      Gpufleet("sim placement --nodes '" + nodes_.path() + "' --pods '" + bad.path() + "'");
  EXPECT_NE(out.status, 0);
  EXPECT_NE(out.text.find(bad.path() + ":3: column 'cpu_milli' (2)"), std::string::npos)
      << out.text;
}

TEST_F(CliTest, UnknownPolicyListsThePolicies) {
  const Output out = Gpufleet("sim placement " + Files() + " --policy best-fit");
  EXPECT_NE(out.status, 0);
  EXPECT_NE(out.text.find("unknown placement policy 'best-fit'"), std::string::npos) << out.text;
  for (const auto& info : sched::PlacementPolicies()) {
    EXPECT_NE(out.text.find(std::string(info.name)), std::string::npos) << info.name;
  }
  const Output report = Gpufleet("sim placement-report --policies fgd,nope --out ''");
  EXPECT_NE(report.status, 0);
  EXPECT_NE(report.text.find("unknown placement policy 'nope'"), std::string::npos) << report.text;
}

// A small Philly-format trace: 400 jobs of 1-16 GPUs over a few hours, rows out of order.
std::string PhillyCsv() {
  std::string csv = "timestamp,duration,num_gpus,gpu_time,cluster\n";
  for (int i = 399; i >= 0; --i) {
    const int gpus = 1 << (i % 5);
    const int minute = i / 10;
    char line[128];
    std::snprintf(line, sizeof line, "2017-10-09 %02d:%02d:%02d,%d.0,%d,%d.0,vc%d\n",
                  8 + minute / 60, minute % 60, i % 60, 60 + (i * 97) % 5000, gpus,
                  gpus * (60 + (i * 97) % 5000), i % 3);
    csv += line;
  }
  return csv;
}

TEST(CliSimRunTest, JsonKeysAndByteIdenticalDecisions) {
  test::TempFile trace("philly.csv", PhillyCsv());
  test::TempFile log_a("decisions-a.csv", "");
  test::TempFile log_b("decisions-b.csv", "");
  for (const char* policy : {"fifo", "backfill", "sjf-oracle", "qssf"}) {
    const std::string args =
        std::string("sim run --trace philly:'") + trace.path() + "' --policy " + policy + " --json";
    const Output a = Gpufleet(args + " --decisions '" + log_a.path() + "'", "2>/dev/null");
    const Output b = Gpufleet(args + " --decisions '" + log_b.path() + "'", "2>/dev/null");
    ASSERT_EQ(a.status, 0) << a.text;
    EXPECT_EQ(a.text, b.text) << policy;
    EXPECT_EQ(Slurp(log_a.path()), Slurp(log_b.path())) << policy;
    EXPECT_GT(Slurp(log_a.path()).size(), 400u * 10) << policy;
    const auto j = nlohmann::json::parse(a.text);
    for (const char* key :
         {"policy", "jobs", "avg_jct_s", "p50_jct_s", "p95_jct_s", "p99_jct_s", "avg_queue_s",
          "makespan_s", "utilization", "preemptions", "unfinished"}) {
      EXPECT_TRUE(j.contains(key)) << policy << " lacks " << key;
    }
    EXPECT_EQ(j["policy"], policy);
    EXPECT_EQ(j["jobs"], 400);
    EXPECT_EQ(j["unfinished"], 0);
  }
}

TEST(CliControllerTest, BadQueueWeightsAreRefusedClearly) {
  const std::string dir = ::testing::TempDir() + "gpufleet-cli-weights-" + std::to_string(getpid());
  for (const char* weight : {"team-a", "=2", "team-a=0", "team-a=x", "team-a=-1"}) {
    const Output out = Gpufleet("controller --listen 127.0.0.1:0 --data-dir '" + dir +
                                "' --policy fairshare --queue-weight '" + weight + "'");
    EXPECT_EQ(out.status, 2) << weight;
    EXPECT_NE(out.text.find("--queue-weight '" + std::string(weight) + "': expected QUEUE=WEIGHT"),
              std::string::npos)
        << out.text;
  }
  std::filesystem::remove_all(dir);
}

TEST(CliControllerTest, BadLogRetentionAndQuotaAreRefusedClearly) {
  const std::string dir = ::testing::TempDir() + "gpufleet-cli-logs-" + std::to_string(getpid());
  for (const char* flag : {"--log-retention", "--job-retention"}) {
    for (const char* age : {"5m", "x", "-1d", "30"}) {
      const Output out = Gpufleet("controller --listen 127.0.0.1:0 --data-dir '" + dir + "' " +
                                  flag + " '" + age + "'");
      EXPECT_EQ(out.status, 2) << flag << " " << age;
      EXPECT_NE(
          out.text.find(std::string(flag) + " '" + age + "': expected a duration of at least 1 h"),
          std::string::npos)
          << out.text;
    }
  }
  const Output negative =
      Gpufleet("controller --listen 127.0.0.1:0 --data-dir '" + dir + "' --log-quota -1");
  EXPECT_NE(negative.status, 0);
  EXPECT_NE(negative.text.find("--log-quota"), std::string::npos) << negative.text;
  std::filesystem::remove_all(dir);
}

TEST(CliControllerTest, BadAllowedHostsAndWriteRatesAreRefusedClearly) {
  const std::string dir = ::testing::TempDir() + "gpufleet-cli-hosts-" + std::to_string(getpid());
  for (const char* host : {"a b", "evil.example/x", "", "a:80"}) {
    const Output out = Gpufleet("controller --listen 127.0.0.1:0 --data-dir '" + dir +
                                "' --allowed-host '" + host + "'");
    EXPECT_NE(out.status, 0) << host;  // CLI11 refuses it (105)
    EXPECT_NE(out.text.find("--allowed-host '" + std::string(host) + "': expected a DNS name"),
              std::string::npos)
        << out.text;
  }
  const Output agent = Gpufleet("agent --listen 127.0.0.1:0 --allowed-host 'x;y'");
  EXPECT_NE(agent.status, 0);
  EXPECT_NE(agent.text.find("--allowed-host"), std::string::npos) << agent.text;
  for (const char* rate : {"nan", "inf", "-1", "0.0001", "2e6", "x"}) {
    const Output out = Gpufleet("controller --listen 127.0.0.1:0 --data-dir '" + dir +
                                "' --user-write-rate '" + rate + "'");
    EXPECT_NE(out.status, 0) << rate;
    EXPECT_NE(out.text.find("--user-write-rate '" + std::string(rate) + "': expected 0"),
              std::string::npos)
        << out.text;
  }
  std::filesystem::remove_all(dir);
}

// Found by a review: an output file was opened through whatever stood at its path, so a link
// planted in a shared --out folder made a run overwrite the linked file. Now the link itself is
// replaced.
TEST(CliOutputTest, AnOutputPathThatIsALinkIsReplacedNotWrittenThrough) {
  const std::string dir = ::testing::TempDir() + "gpufleet-cli-out-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  { std::ofstream(dir + "/victim") << "precious\n"; }
  std::filesystem::create_symlink(dir + "/victim", dir + "/trace.csv");
  const Output out = Gpufleet("sim generate --jobs 10 --out '" + dir + "/trace.csv'");
  EXPECT_EQ(out.status, 0) << out.text;
  EXPECT_EQ(Slurp(dir + "/victim"), "precious\n");
  EXPECT_FALSE(std::filesystem::is_symlink(dir + "/trace.csv"));
  EXPECT_NE(Slurp(dir + "/trace.csv").find('\n'), std::string::npos);
  // A device given itself is written as it is, never replaced.
  EXPECT_EQ(Gpufleet("sim generate --jobs 10 --out /dev/null").status, 0);
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  std::filesystem::remove_all(dir);
}

// Found by a review: a data directory made in advance by another account (in a shared place) was
// taken as it was, and its planted token became the admin's. Another account's directory, or a
// link, is refused.
TEST(CliControllerTest, ADataDirectoryOfAnotherAccountOrALinkIsRefused) {
  const std::string dir = ::testing::TempDir() + "gpufleet-cli-owner-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/real");
  std::filesystem::create_symlink(dir + "/real", dir + "/link");
  Output out = Gpufleet("controller --listen 127.0.0.1:0 --data-dir '" + dir + "/link'");
  EXPECT_EQ(out.status, 1) << out.text;
  EXPECT_NE(out.text.find("symbolic link"), std::string::npos) << out.text;
  if (geteuid() == 0) {
    ASSERT_EQ(::chown((dir + "/real").c_str(), 65534, 65534), 0);
    out = Gpufleet("controller --listen 127.0.0.1:0 --data-dir '" + dir + "/real'");
    EXPECT_EQ(out.status, 1) << out.text;
    EXPECT_NE(out.text.find("belongs to uid 65534"), std::string::npos) << out.text;
    EXPECT_FALSE(std::filesystem::exists(dir + "/real/token")) << "nothing written there";
  }
  // Found by a review: a data directory of one's own under a directory another account may write
  // (here: everyone, without the sticky bit) was taken; that account could rename it away while
  // the server ran and put its own, or a link, in its place.
  std::filesystem::create_directories(dir + "/open");
  std::filesystem::permissions(dir + "/open", std::filesystem::perms::all);  // 0777, not sticky
  out = Gpufleet("controller --listen 127.0.0.1:0 --data-dir '" + dir + "/open/data'");
  EXPECT_EQ(out.status, 1) << out.text;
  EXPECT_NE(
      out.text.find("could be replaced by another account: " + dir + "/open is writable by others"),
      std::string::npos)
      << out.text;
  EXPECT_FALSE(std::filesystem::exists(dir + "/open/data/token")) << "nothing written there";
  std::filesystem::permissions(dir + "/open",
                               std::filesystem::perms::sticky_bit | std::filesystem::perms::all,
                               std::filesystem::perm_options::replace);
  out = Gpufleet("controller --listen 127.0.0.1:0 --data-dir '" + dir +
                 "/open/data' --log-retention nonsense");
  EXPECT_EQ(out.status, 2) << "a sticky directory, as /tmp, is fine: " << out.text;
  std::filesystem::remove_all(dir);
}

TEST(CliSimRunTest, BadInputGetsClearErrors) {
  test::TempFile trace("philly.csv", PhillyCsv());
  const std::string good = std::string("sim run --trace philly:'") + trace.path() + "'";
  Output out = Gpufleet(good + " --policy lifo");
  EXPECT_EQ(out.status, 2);
  EXPECT_NE(out.text.find("unknown queue policy 'lifo'"), std::string::npos) << out.text;
  out = Gpufleet(std::string("sim run --trace helios:'") + trace.path() + "'");
  EXPECT_EQ(out.status, 2);
  EXPECT_NE(out.text.find("FORMAT:FILE"), std::string::npos) << out.text;
  out = Gpufleet(good + " --cluster philly-9000");
  EXPECT_EQ(out.status, 2);
  EXPECT_NE(out.text.find("unknown cluster 'philly-9000'"), std::string::npos) << out.text;
  test::TempFile huge("huge.csv",
                      "timestamp,duration,num_gpus,gpu_time,cluster\n"
                      "2017-10-09 08:00:00,60.0,1024,61440.0,vc0\n");
  out = Gpufleet(std::string("sim run --trace philly:'") + huge.path() + "'");
  EXPECT_EQ(out.status, 2);
  EXPECT_NE(out.text.find("asks for 1024 GPUs"), std::string::npos) << out.text;
  test::TempFile negative("negative.csv",
                          "timestamp,duration,num_gpus,gpu_time,cluster\n"
                          "2017-10-09 08:00:00,-60.0,1,-60.0,vc0\n");
  out = Gpufleet(std::string("sim run --trace philly:'") + negative.path() + "'");
  EXPECT_EQ(out.status, 2);
  EXPECT_NE(out.text.find(negative.path() + ":2: column 'duration'"), std::string::npos)
      << out.text;
}

TEST(CliSimRunTest, CompareRunsEveryPolicy) {
  test::TempFile trace("philly.csv", PhillyCsv());
  const Output out =
      Gpufleet(std::string("sim compare --trace philly:'") + trace.path() + "' --threads 1");
  ASSERT_EQ(out.status, 0) << out.text;
  for (const auto& info : sched::QueuePolicies()) {
    EXPECT_NE(out.text.find("| " + std::string(info.name) + " |"), std::string::npos) << info.name;
  }
}

// ---- The node agent's commands ----------------------------------------------------------------

std::string FakeNvmlEnv() {
  return std::string("LD_LIBRARY_PATH='") + FAKE_NVML_DIR + "' FAKE_NVML_SCENARIO='" +
         SAMPLE_SCENARIO + "'";
}

TEST(Cli, TopOnceJsonOnTheFakeDriver) {
  const Output out = Gpufleet("top --once --json", "2>/dev/null", FakeNvmlEnv());
  ASSERT_EQ(out.status, 0) << out.text;
  const auto doc = nlohmann::json::parse(out.text);
  EXPECT_EQ(doc["backend"], "nvml");
  EXPECT_EQ(doc["simulated"], false);
  EXPECT_EQ(doc["driver_version"], "550.54.15");
  ASSERT_EQ(doc["gpus"].size(), 3U);
  const auto& gpu0 = doc["gpus"][0];
  EXPECT_EQ(gpu0["uuid"], "GPU-5e1c7a52-0d3b-4f60-9a51-7b2f0c1d9e01");
  EXPECT_EQ(gpu0["memory_total_mib"], 81559);
  EXPECT_TRUE(gpu0["processes"].is_array());
  EXPECT_EQ(doc["gpus"][2]["mig_mode"], 1);
  EXPECT_EQ(doc["gpus"][2]["memory_temperature_c"], nullptr) << "not supported on GPU 2";
}

TEST(Cli, TopWithoutADriverSaysSoAndUsesSimulatedGpus) {
  const Output out =
      Gpufleet("top --once --json --nvml-library /nonexistent/libnvidia-ml.so.1", "2>/dev/null");
  ASSERT_EQ(out.status, 0) << out.text;
  const auto doc = nlohmann::json::parse(out.text);
  EXPECT_EQ(doc["simulated"], true);
  EXPECT_NE(doc["notice"].get<std::string>().find("no NVIDIA driver"), std::string::npos);
  EXPECT_EQ(doc["gpus"].size(), 4U);
  const Output text = Gpufleet("top --once --simulated-gpus 2");
  ASSERT_EQ(text.status, 0);
  EXPECT_NE(text.text.find("SIMULATED GPUs"), std::string::npos);
  EXPECT_NE(text.text.find("PROCESSES"), std::string::npos);
}

TEST(Cli, AgentAndTopRejectBadFlagsClearly) {
  Output out = Gpufleet("agent --listen localhost");
  EXPECT_EQ(out.status, 2);
  EXPECT_NE(out.text.find("expected HOST:PORT"), std::string::npos) << out.text;
  out = Gpufleet("agent --listen 127.0.0.1:99999");
  EXPECT_EQ(out.status, 2);
  EXPECT_NE(out.text.find("not a number in 0..65535"), std::string::npos) << out.text;
  out = Gpufleet("agent --listen 127.0.0.1:0 --interval 0");
  EXPECT_EQ(out.status, 2);
  EXPECT_NE(out.text.find("--interval"), std::string::npos) << out.text;
  out = Gpufleet("top --once --sort x");
  EXPECT_EQ(out.status, 2);
  EXPECT_NE(out.text.find("--sort 'x'"), std::string::npos) << out.text;
  out = Gpufleet("top --once --simulated-gpus -3");
  EXPECT_NE(out.status, 0);
}

// Before, inf went out as JSON null (read as "not given": no limit) and NaN and negatives failed
// the client's own "> 0" test and were dropped: the job ran without the limit asked. 0 still
// means "none" (scripts pass --cpus ${CPUS:-0}).
TEST(Cli, SubmitRefusesCpusAndGpuSharesThatAreNotFinitePositiveNumbers) {
  for (const char* flag :
       {"--cpus inf", "--cpus nan", "--cpus -1", "--cpus 0.005", "--cpus 5000", "--cpus 2x",
        "--gpu-share inf", "--gpu-share -0.5", "--gpu-share 0.0001", "--gpu-share 1.5"}) {
    const Output out = Gpufleet(std::string("submit ") + flag + " -- true");
    EXPECT_NE(out.status, 0) << flag << ": " << out.text;  // CLI11's code for a bad value
    EXPECT_NE(out.text.find(std::string(flag).substr(0, std::string(flag).find(' ')) + ": "),
              std::string::npos)
        << flag << ": " << out.text;
  }
  // Past the flags, it stops for want of a server (none configured), not at them.
  const Output none = Gpufleet("submit --cpus 0 --gpu-share 0 -- true", "2>&1",
                               "HOME=/nonexistent GPUFLEET_SERVER= GPUFLEET_DATA_DIR=");
  EXPECT_NE(none.text.find("no server"), std::string::npos) << none.text;
  EXPECT_EQ(none.text.find("--cpus:"), std::string::npos) << none.text;
  EXPECT_EQ(none.text.find("--gpu-share:"), std::string::npos) << none.text;
}

TEST(Cli, AgentWithAMalformedScenarioFallsBackAndSaysWhy) {
  test::TempFile bad("bad-scenario.json", "{\"gpus\": [{\"nmae\": \"typo\"}]}");
  const Output out = Gpufleet("top --once --json", "2>&1 >/dev/null",
                              std::string("LD_LIBRARY_PATH='") + FAKE_NVML_DIR +
                                  "' FAKE_NVML_SCENARIO='" + bad.path() + "'");
  EXPECT_NE(out.text.find("fake-nvml: " + bad.path() + ": gpus[0]"), std::string::npos) << out.text;
}

}  // namespace
}  // namespace gpufleet

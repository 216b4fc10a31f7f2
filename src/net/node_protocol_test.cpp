#include "net/node_protocol.h"

#include <gtest/gtest.h>

#include "core/node.h"

namespace gpufleet::net {
namespace {

TEST(NodeProtocol, HeartbeatSurvivesARoundTripWithBinaryLogBytes) {
  Heartbeat beat;
  beat.node = "gpu-07";
  beat.address = "127.0.0.7";
  beat.node_epoch = 12;
  beat.gpus = 8;
  beat.gpu_model = "H100-80GB";
  beat.cpu_milli = 96000;
  beat.memory_mib = 786432;
  beat.samples_json = R"({"gpus":[{"index":0}]})";
  ReportedJob job;
  job.id = 5;
  job.epoch = 2;
  job.rank = 1;
  job.state = ReportedJob::State::kExited;
  job.exit_code = 3;
  job.stopped = true;
  job.log_size = 10;
  job.log_from = 4;
  job.log_data = std::string("a\0\xff\xfe\n", 5);  // not UTF-8: must arrive byte for byte
  job.usage.source = core::UsageSource::kCgroupV1;
  job.usage.set(core::UsageFigure::kCpuUsageUs, 1500000);
  job.usage.set(core::UsageFigure::kOomKills, 1);
  beat.limits = "cgroup-v1";
  beat.jobs.push_back(job);
  GpuFigure sick;
  sick.index = 3;
  sick.healthy = false;
  sick.health_reason = "XID 79 (GPU has fallen off the bus)";
  beat.figures = {GpuFigure{}, sick};
  auto parsed = ParseHeartbeat(ToJson(beat));
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const Heartbeat& b = parsed.value();
  EXPECT_EQ(b.node, "gpu-07");
  EXPECT_EQ(b.address, "127.0.0.7");
  EXPECT_EQ(b.node_epoch, 12);
  EXPECT_EQ(b.gpus, 8);
  EXPECT_EQ(b.cpu_milli, 96000);
  EXPECT_EQ(b.memory_mib, 786432);
  EXPECT_EQ(b.samples_json, R"({"gpus":[{"index":0}]})");
  ASSERT_EQ(b.jobs.size(), 1U);
  EXPECT_EQ(b.jobs[0].state, ReportedJob::State::kExited);
  EXPECT_EQ(b.jobs[0].exit_code, 3);
  EXPECT_TRUE(b.jobs[0].stopped);
  EXPECT_EQ(b.jobs[0].rank, 1);
  EXPECT_EQ(b.jobs[0].log_from, 4);
  EXPECT_EQ(b.jobs[0].log_data, job.log_data);
  EXPECT_EQ(b.limits, "cgroup-v1");
  EXPECT_EQ(b.jobs[0].usage.source, core::UsageSource::kCgroupV1);
  EXPECT_EQ(b.jobs[0].usage.figures, job.usage.figures) << "missing figures stay missing";
  ASSERT_EQ(b.figures.size(), 2U);
  EXPECT_TRUE(b.figures[0].healthy);
  EXPECT_FALSE(b.figures[1].healthy);
  EXPECT_EQ(b.figures[1].index, 3);
  EXPECT_EQ(b.figures[1].health_reason, sick.health_reason);
}

TEST(NodeProtocol, ReplySurvivesARoundTrip) {
  HeartbeatReply reply;
  reply.node_epoch = 3;
  reply.lease_ms = 10000;
  reply.store_id = "0123456789abcdef0123456789abcdef";
  Assignment a;
  a.id = 9;
  a.epoch = 4;
  a.rank = 1;
  a.user = "alice";
  a.argv = {"python", "train.py"};
  a.env = {{"LR", "0.1"}};
  a.launch_env = {{"MASTER_ADDR", "10.0.0.1"}, {"NODE_RANK", "1"}};
  a.gpu_indices = {2, 3};
  a.restartable = true;
  a.cpu_milli = 4000;
  a.memory_mib = 2048;
  a.started = true;
  a.stop = true;
  a.grace_s = 30;
  a.container.image = "localhost/train:1";
  a.container.mounts = {{"/data", "/data", true}};
  a.pull = core::PullPolicy::kIfMissing;
  reply.assignments.push_back(a);
  reply.logs.push_back({9, 1, 4096});
  reply.logs.push_back({10, 0, 0, true});
  auto parsed = ParseHeartbeatReply(ToJson(reply));
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed.value().store_id, reply.store_id);
  const Assignment& x = parsed.value().assignments.at(0);
  EXPECT_EQ(x.argv, a.argv);
  EXPECT_EQ(x.env, a.env);
  EXPECT_EQ(x.launch_env, a.launch_env);
  EXPECT_EQ(x.gpu_indices, a.gpu_indices);
  EXPECT_TRUE(x.restartable && x.started && x.stop);
  EXPECT_EQ(x.cpu_milli, 4000);
  EXPECT_EQ(x.memory_mib, 2048);
  EXPECT_DOUBLE_EQ(x.grace_s, 30);
  EXPECT_EQ(x.container, a.container);
  EXPECT_EQ(x.pull, core::PullPolicy::kIfMissing);
  EXPECT_EQ(parsed.value().logs.at(0).size, 4096);
  EXPECT_FALSE(parsed.value().logs.at(0).held_back);
  EXPECT_TRUE(parsed.value().logs.at(1).held_back);
  EXPECT_EQ(parsed.value().lease_ms, 10000);
}

TEST(NodeProtocol, BadHeartbeatsNameWhatIsWrong) {
  EXPECT_NE(ParseHeartbeat("{").error().find("malformed JSON"), std::string::npos);
  EXPECT_NE(ParseHeartbeat("[]").error().find("JSON object"), std::string::npos);
  EXPECT_NE(ParseHeartbeat(R"({"gpus":1})").error().find("node"), std::string::npos);
  EXPECT_NE(ParseHeartbeat(R"({"node":"a b","gpus":1})").error().find("node:"), std::string::npos);
  EXPECT_NE(ParseHeartbeat(R"({"node":"a","gpus":99})").error().find("gpus:"), std::string::npos);
  EXPECT_NE(ParseHeartbeat(R"({"node":"a","gpus":1,"jobs":[{"id":1,"epoch":1,"state":"x"}]})")
                .error()
                .find("state"),
            std::string::npos);
  EXPECT_NE(ParseHeartbeat(
                R"({"node":"a","gpus":1,"jobs":[{"id":1,"epoch":1,"state":"running",
                    "log_from":0,"log_data":"@@@@"}]})")
                .error()
                .find("log_data"),
            std::string::npos);
  EXPECT_NE(ParseHeartbeat(R"({"node":"a","gpus":1,"limits":"cgroup-v9"})").error().find("limits"),
            std::string::npos);
  EXPECT_TRUE(ParseHeartbeat(R"({"node":"a","gpus":1,"limits":"cgroup-v2-memory"})").ok());
  // Found by a review: what a node says is printed to the controller's log and terminals; a line
  // break in it forged log lines, an escape sequence reached terminals.
  auto said = ParseHeartbeat(
      R"({"node":"a","gpus":1,"limits_why":"x\ngpufleet: admin token is ...\u001b[2J"})");
  ASSERT_TRUE(said.ok()) << said.error();
  EXPECT_EQ(said.value().limits_why, "x\\x0agpufleet: admin token is ...\\x1b[2J");
  EXPECT_FALSE(ParseHeartbeat(R"({"node":"a\rb","gpus":1})").ok()) << "no control characters";
  EXPECT_FALSE(ParseHeartbeat(R"({"node":"a\u001bb","gpus":1})").ok());
  EXPECT_TRUE(IsNodeName("gpu-07.rack3"));
  EXPECT_FALSE(IsNodeName("a\u202eb"));
  EXPECT_FALSE(IsNodeName(""));
  const std::string job = R"({"node":"a","gpus":1,"jobs":[{"id":1,"epoch":1,"state":"running",)";
  EXPECT_NE(ParseHeartbeat(job + R"("usage":{"source":"cgroup-v1","oom_kills":-1}}]})")
                .error()
                .find("jobs[].usage.oom_kills"),
            std::string::npos);
  EXPECT_NE(ParseHeartbeat(job + R"("usage":{"source":"disk","oom_kills":1}}]})")
                .error()
                .find("jobs[].usage.source"),
            std::string::npos);
  EXPECT_NE(ParseHeartbeat(job + R"("usage":[1]}]})").error().find("jobs[].usage"),
            std::string::npos);
  // An optional field of an array's element is named by its path, not bare ("t", "rank").
  const struct {
    std::string body, field;
  } rows[] = {
      {R"({"node":"a","gpus":1,"figures":[{"index":0,"t":-5}]})", "figures[].t"},
      {R"({"node":"a","gpus":1,"figures":[{"index":0,"util":101}]})", "figures[].util"},
      {R"({"node":"a","gpus":1,"figures":[{"index":0,"ok":"yes"}]})", "figures[].ok"},
      {job + R"("rank":-1}]})", "jobs[].rank"},
      {job + R"("reason":7}]})", "jobs[].reason"},
      {R"({"node":"a","gpus":1,"figures":[{"index":99}]})", "figures[].index"},
  };
  for (const auto& row : rows) {
    auto parsed = ParseHeartbeat(row.body);
    ASSERT_FALSE(parsed.ok()) << row.body;
    EXPECT_EQ(parsed.failure().field, row.field) << row.body;
    EXPECT_EQ(parsed.error().rfind(row.field + ": ", 0), 0U) << parsed.error();
  }
  const std::string reply = R"({"node_epoch":1,"lease_ms":1000,"assignments":[{"id":1,"epoch":1,)";
  auto bad_rank = ParseHeartbeatReply(reply + R"("argv":["x"],"rank":1.5}]})");
  ASSERT_FALSE(bad_rank.ok());
  EXPECT_EQ(bad_rank.failure().field, "assignments[].rank");
  auto bad_env = ParseHeartbeatReply(reply + R"("argv":["x"],"env":[["A",1]]}]})");
  ASSERT_FALSE(bad_env.ok());
  EXPECT_EQ(bad_env.failure().field, "assignments[].env");
  auto bad_log = ParseHeartbeatReply(
      R"({"node_epoch":1,"lease_ms":1000,"assignments":[],"logs":[{"id":1,"size":1,"held_back":2}]})");
  ASSERT_FALSE(bad_log.ok());
  EXPECT_EQ(bad_log.failure().field, "logs[].held_back");
  // An unreadable store id is ignored, not a reason to refuse the reply (the node would lose
  // its lease over an informational field).
  for (const char* store_id : {R"("../x")", R"("ABC")", "7"}) {
    auto odd_store = ParseHeartbeatReply(
        std::string(R"({"node_epoch":1,"lease_ms":1000,"assignments":[],"store_id":)") + store_id +
        "}");
    ASSERT_TRUE(odd_store.ok()) << store_id << ": " << odd_store.error();
    EXPECT_EQ(odd_store.value().store_id, "") << store_id;
  }
  auto older = ParseHeartbeatReply(R"({"node_epoch":1,"lease_ms":1000,"assignments":[]})");
  ASSERT_TRUE(older.ok()) << older.error();
  EXPECT_EQ(older.value().store_id, "") << "a controller before store ids";
}

// Topology-aware placement: the agent's link table arrives whole, and a heartbeat without one
// (an older agent, or a simulated node) has an empty table.
TEST(NodeProtocol, GpuLinksSurviveARoundTrip) {
  Heartbeat beat;
  beat.node = "dgx-1";
  beat.gpus = 3;
  beat.gpu_links =
      core::MakeGpuLinks({{0, 2, 1}, {2, 0, 0}, {1, 0, 0}}, {{5, 4, 0}, {4, 5, 0}, {0, 0, 5}}, 3)
          .value();
  const std::string text = ToJson(beat);
  EXPECT_NE(text.find(R"("gpu_links":{"nvlinks":[[0,2,1],[2,0,0],[1,0,0]])"), std::string::npos)
      << text;
  auto parsed = ParseHeartbeat(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed.value().gpu_links, beat.gpu_links);

  beat.gpu_links = {};
  const std::string bare = ToJson(beat);
  EXPECT_EQ(bare.find("gpu_links"), std::string::npos);
  ASSERT_TRUE(ParseHeartbeat(bare).ok());
  EXPECT_TRUE(ParseHeartbeat(bare).value().gpu_links.empty());
  EXPECT_TRUE(
      ParseHeartbeat(R"({"node":"a","gpus":2,"gpu_links":null})").value().gpu_links.empty());
}

TEST(NodeProtocol, BadGpuLinksNameTheField) {
  const auto error = [](const std::string& links, int gpus = 2) {
    auto r = ParseHeartbeat(R"({"node":"a","gpus":)" + std::to_string(gpus) + R"(,"gpu_links":)" +
                            links + "}");
    EXPECT_FALSE(r.ok()) << links;
    if (r.ok()) return std::string();
    EXPECT_EQ(r.failure().field.rfind("gpu_links", 0), 0U) << r.failure().field;
    return r.error();
  };
  const std::string pcie = R"("pcie":[[5,4],[4,5]])";
  const auto has = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  EXPECT_TRUE(has(error("[1]"), "gpu_links: must be an object"));
  EXPECT_TRUE(has(error("{" + pcie + "}"), "gpu_links.nvlinks: missing"));
  EXPECT_TRUE(has(error(R"({"nvlinks":[[0,1],[1,0]]})"), "gpu_links.pcie: missing"));
  EXPECT_TRUE(has(error(R"({"nvlinks":"x",)" + pcie + "}"), "gpu_links.nvlinks: must be an array"));
  EXPECT_TRUE(has(error(R"({"nvlinks":[1,2],)" + pcie + "}"), "each row must be an array"));
  EXPECT_TRUE(has(error(R"({"nvlinks":[[0,1.5],[1.5,0]],)" + pcie + "}"), "gpu_links.nvlinks"));
  EXPECT_TRUE(has(error(R"({"nvlinks":[[0,-1],[-1,0]],)" + pcie + "}"), "gpu_links.nvlinks"));
  EXPECT_TRUE(has(error(R"({"nvlinks":[[0,300],[300,0]],)" + pcie + "}"), "gpu_links.nvlinks"));
  // Square, one row per GPU, symmetric, values in range.
  EXPECT_TRUE(
      has(error(R"({"nvlinks":[[0,1],[1,0]],)" + pcie + "}", 3), "nvlinks: expected 3 rows"));
  EXPECT_TRUE(
      has(error(R"({"nvlinks":[[0,1],[1]],)" + pcie + "}"), "nvlinks[1]: expected 2 columns"));
  EXPECT_TRUE(has(error(R"({"nvlinks":[[0,1],[2,0]],)" + pcie + "}"), "differ"));
  EXPECT_TRUE(has(error(R"({"nvlinks":[[0,65],[65,0]],)" + pcie + "}"), "not in 0..64"));
  EXPECT_TRUE(has(error(R"({"nvlinks":[[0,0],[0,0]],"pcie":[[5,9],[9,5]]})"), "not in 0..5"));
  EXPECT_TRUE(has(error(R"({"nvlinks":[[1,0],[0,0]],)" + pcie + "}"), "nvlinks[0][0]"));
  EXPECT_TRUE(has(error(R"({"nvlinks":[[0,0],[0,0]],)" + pcie + "}", 1), "at least 2 GPUs"));
}

// Security findings 5, 6 and 10: bounds are the core's one constant, numbers are never cast
// unchecked, and nesting is limited, so no heartbeat can abort or crash the controller.
TEST(NodeProtocol, HostileHeartbeatsAreErrorsNotCrashes) {
  const std::string over = std::to_string(core::kMaxGpusPerNode + 1);
  EXPECT_NE(ParseHeartbeat(R"({"node":"a","gpus":)" + over + "}").error().find("gpus:"),
            std::string::npos);
  EXPECT_TRUE(
      ParseHeartbeat(R"({"node":"a","gpus":)" + std::to_string(core::kMaxGpusPerNode) + "}").ok());
  for (
      const char* body : {
          R"({"node":"a","gpus":1e300})",
          R"({"node":"a","gpus":-1})",
          R"({"node":"a","gpus":2,"figures":[{"index":1e300}]})",
          R"({"node":"a","gpus":2,"figures":[{"index":0,"util":1e300}]})",
          R"({"node":"a","gpus":2,"jobs":[{"id":1,"epoch":1e300,"state":"running"}]})",
          R"({"node":"a","gpus":2,"jobs":[{"id":1,"epoch":1,"state":"exited","exit_code":4294967296}]})",
          R"({"node":"a","gpus":2,"jobs":[{"id":1,"epoch":1,"state":"running","reason":"a\u0000b"}]})",
          R"({"node":"a\u0000b","gpus":1})",
          R"({"node":"a","gpus":1,"jobs":{"id":1}})",
          R"({"node":"a","gpus":1,"jobs":[7]})",
      }) {
    EXPECT_FALSE(ParseHeartbeat(body).ok()) << body;
  }
  const std::string deep = R"({"node":"a","gpus":1,"samples":)" + std::string(200000, '[') +
                           std::string(200000, ']') + "}";
  auto parsed = ParseHeartbeat(deep);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().find("nested deeper"), std::string::npos);
}

TEST(NodeProtocol, HostileRepliesAreErrors) {
  for (
      const char* body : {
          R"({"node_epoch":1,"lease_ms":1e300,"assignments":[]})",
          R"({"node_epoch":1,"lease_ms":1000,"assignments":[{"id":1,"epoch":1,"argv":["a\u0000b"]}]})",
          R"({"node_epoch":1,"lease_ms":1000,"assignments":[{"id":1,"epoch":1,"argv":[]}]})",
          R"({"node_epoch":1,"lease_ms":1000,"assignments":[{"id":1,"epoch":1,"argv":["x"],"gpu_indices":[99]}]})",
          R"({"node_epoch":1,"lease_ms":1000,"assignments":[{"id":1,"epoch":1,"argv":["x"],"env":[["A"]]}]})",
          R"({"node_epoch":1,"lease_ms":1000})",
      }) {
    EXPECT_FALSE(ParseHeartbeatReply(body).ok()) << body;
  }
}

TEST(NodeProtocol, Base64MatchesTheStandardAlphabetAndPadding) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  for (const std::string& s :
       {std::string("f"), std::string("fo"), std::string("\xff\x00\x01", 3)}) {
    EXPECT_EQ(Base64Decode(Base64Encode(s)).value(), s);
  }
  EXPECT_FALSE(Base64Decode("Zg=").ok());
  EXPECT_FALSE(Base64Decode("Z===").ok());
  EXPECT_FALSE(Base64Decode("Zm=v").ok());
}

}  // namespace
}  // namespace gpufleet::net

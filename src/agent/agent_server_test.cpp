#include "agent/agent_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "gpu/simulated_probe.h"

namespace gpufleet::agent {
namespace {

TEST(ListenAddress, Parses) {
  auto a = net::ParseListenAddress("127.0.0.1:9400");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.value().host, "127.0.0.1");
  EXPECT_EQ(a.value().port, 9400);
  auto v6 = net::ParseListenAddress("[::1]:0");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6.value().host, "::1");
  for (const char* bad : {"9400", "127.0.0.1:", ":80", "127.0.0.1:http", "127.0.0.1:70000"}) {
    auto r = net::ParseListenAddress(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().find("--listen"), std::string::npos);
  }
}

// Simulated GPUs, each running one process whose command line holds a secret.
class ProcessProbe final : public gpu::GpuProbe {
 public:
  std::string BackendName() const override { return inner_.BackendName(); }
  bool IsSimulated() const override { return true; }
  std::string DriverVersion() const override { return inner_.DriverVersion(); }
  int DeviceCount() const override { return inner_.DeviceCount(); }
  gpu::GpuSample Sample(int index, double now_s) override {
    gpu::GpuSample s = inner_.Sample(index, now_s);
    gpu::GpuProcess p;
    p.pid = 4242;
    p.uid = 1001;
    p.user = "alice";
    p.command = "python train.py --hf-token=SECRET";
    p.job_id = "7";
    s.processes.Set({p});
    return s;
  }
  std::vector<gpu::GpuEvent> WaitEvents(int timeout_ms) override {
    return inner_.WaitEvents(timeout_ms);
  }
  gpu::GpuTopology Topology() override { return inner_.Topology(); }

 private:
  gpu::SimulatedProbe inner_{1};
};

// Found by a review: the agent's port, open to whoever can connect (a container job on the
// host's network, which cannot read the host's /proc), served every GPU process's command line.
TEST(AgentServerTest, TheAgentsPortLeavesOutEachProcesssCommandLine) {
  ProcessProbe probe;
  gpu::Sampler sampler(probe, {});
  sampler.SampleOnce();
  AgentServer server(sampler, HostInfo{"test-host", "simulated", "simulated", ""});
  auto port = server.Bind({"127.0.0.1", 0});
  ASSERT_TRUE(port.ok()) << port.error();
  std::thread serving([&server] { server.http().Serve(); });
  httplib::Client client("127.0.0.1", port.value());
  auto gpus = client.Get("/v1/gpus");
  server.http().Stop();
  serving.join();
  ASSERT_TRUE(gpus);
  EXPECT_EQ(gpus->body.find("SECRET"), std::string::npos) << gpus->body;
  const auto doc = nlohmann::json::parse(gpus->body);
  const auto& process = doc["gpus"][0]["processes"][0];
  EXPECT_EQ(process["pid"], 4242);
  EXPECT_TRUE(process["command"].is_null());
  // `gpufleet top --json` and the heartbeat (its owner's, and the controller's to filter) keep it.
  EXPECT_NE(GpusToJson(HostInfo{}, sampler.Latest()).find("SECRET"), std::string::npos);
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sampler_.SampleOnce();
    auto port = server_.Bind({"127.0.0.1", 0});
    ASSERT_TRUE(port.ok()) << port.error();
    port_ = port.value();
    thread_ = std::thread([this] { server_.http().Serve(); });
  }
  void TearDown() override {
    server_.http().Stop();
    thread_.join();
  }
  gpu::SimulatedProbe probe_{3};
  gpu::Sampler sampler_{probe_, {}};
  AgentServer server_{sampler_, HostInfo{"test-host", "simulated", "simulated", ""}};
  std::thread thread_;
  int port_ = 0;
};

TEST_F(ServerTest, ServesMetricsJsonAndErrors) {
  httplib::Client client("127.0.0.1", port_);
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  EXPECT_NE(metrics->body.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"2\""), std::string::npos);
  EXPECT_NE(metrics->body.find("gpufleet_gpu_simulated{gpu=\"0\""), std::string::npos);

  auto gpus = client.Get("/v1/gpus");
  ASSERT_TRUE(gpus);
  const auto doc = nlohmann::json::parse(gpus->body);
  EXPECT_EQ(doc["hostname"], "test-host");
  EXPECT_EQ(doc["simulated"], true);
  ASSERT_EQ(doc["gpus"].size(), 3U);
  EXPECT_TRUE(doc["gpus"][0]["name"].get<std::string>().rfind("SIMULATED", 0) == 0);

  auto history = client.Get("/v1/gpus/1/history?seconds=60");
  ASSERT_TRUE(history);
  EXPECT_EQ(history->status, 200);
  EXPECT_EQ(nlohmann::json::parse(history->body)["points"].size(), 1U);

  auto bad_gpu = client.Get("/v1/gpus/9/history");
  ASSERT_TRUE(bad_gpu);
  EXPECT_EQ(bad_gpu->status, 404);
  auto bad_seconds = client.Get("/v1/gpus/0/history?seconds=abc");
  ASSERT_TRUE(bad_seconds);
  EXPECT_EQ(bad_seconds->status, 400);
  EXPECT_NE(bad_seconds->body.find("seconds"), std::string::npos);
  auto missing = client.Get("/v2/none");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find("/metrics"), std::string::npos);
  auto post = client.Post("/metrics", std::string(200 * 1024, 'x'), "text/plain");
  ASSERT_TRUE(post);
  EXPECT_GE(post->status, 400);
  // Still serving after the bad requests.
  auto again = client.Get("/healthz");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
}

TEST_F(ServerTest, SecondBindOnTheSamePortFailsClearly) {
  gpu::SimulatedProbe probe(1);
  gpu::Sampler sampler(probe, {});
  AgentServer other(sampler, HostInfo{});
  auto port = other.Bind({"127.0.0.1", port_});
  ASSERT_FALSE(port.ok());
  EXPECT_NE(port.error().find("cannot listen on 127.0.0.1:" + std::to_string(port_)),
            std::string::npos);
}

// Slow clients hold connections, never the agent's four workers: /metrics keeps answering.
TEST_F(ServerTest, MetricsAnswerWhileSlowClientsHoldConnections) {
  std::vector<int> slow;
  for (int i = 0; i < 8; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_GT(send(fd, "GET /metrics HTTP/1.1\r\nHost: a\r\n", 32, MSG_NOSIGNAL), 0);
    slow.push_back(fd);
  }
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (int fd : slow) send(fd, "X-Slow: 1\r\n", 11, MSG_NOSIGNAL);
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(1, 0);
    const auto start = std::chrono::steady_clock::now();
    auto metrics = client.Get("/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_EQ(metrics->status, 200);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  }
  for (int fd : slow) close(fd);
}

}  // namespace
}  // namespace gpufleet::agent

#include "agent/agent_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/metrics_text.h"

namespace gpufleet::agent {
namespace {

constexpr const char* kVersion = "0.1.0";

std::string ErrorJson(const std::string& message) {
  return nlohmann::json{{"error", message}}.dump(-1, ' ', false,
                                                 nlohmann::json::error_handler_t::replace);
}

}  // namespace

core::Result<ListenAddress> ParseListenAddress(const std::string& text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return core::Error{"--listen '" + text + "': expected HOST:PORT, e.g. 127.0.0.1:9400"};
  }
  ListenAddress address;
  address.host = text.substr(0, colon);
  if (address.host.size() > 2 && address.host.front() == '[' && address.host.back() == ']') {
    address.host = address.host.substr(1, address.host.size() - 2);
  }
  const std::string port = text.substr(colon + 1);
  int value = -1;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value < 0 || value > 65535) {
    return core::Error{"--listen '" + text + "': port '" + port + "' is not a number in 0..65535"};
  }
  address.port = value;
  return address;
}

struct AgentServer::Impl {
  Impl(gpu::Sampler& s, HostInfo h)
      : sampler(s), host(std::move(h)), topology_json(TopologyToJson(s.probe().Topology())) {}
  gpu::Sampler& sampler;
  HostInfo host;
  std::string topology_json;  // read once: the PCIe tree does not change while we run
  // Serve/Stop hand-off: httplib's stop() only works once the listen loop runs, so Stop waits for
  // that (or for Serve to finish) instead of racing it.
  std::mutex mutex;
  bool stop_requested = false;
  bool serving = false;
  std::atomic<bool> finished{false};
  httplib::Server server;
};

AgentServer::AgentServer(gpu::Sampler& sampler, HostInfo host)
    : impl_(std::make_unique<Impl>(sampler, std::move(host))) {
  Impl& impl = *impl_;
  httplib::Server& server = impl.server;
  // Two workers are plenty for scrapes, and keep the agent's footprint small.
  server.new_task_queue = [] { return new httplib::ThreadPool(4); };
  // Short keep-alive, so idle scrapers' connections do not hold the workers.
  server.set_keep_alive_timeout(2);
  server.set_payload_max_length(64 * 1024);
  // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, which would let a second agent
  // silently share the port instead of failing to start.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server.set_read_timeout(5, 0);
  server.set_write_timeout(5, 0);

  server.Get("/metrics", [&impl](const httplib::Request&, httplib::Response& res) {
    thread_local std::string body;
    MetricsContext context{
        impl.host.hostname,       impl.host.backend,
        impl.host.driver_version, kVersion,
        impl.sampler.rounds(),    std::min(impl.sampler.SecondsSinceLastRound(), 1e9)};
    RenderMetrics(impl.sampler.Latest(), context, body);
    res.set_content(body, "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Get("/healthz", [&impl](const httplib::Request&, httplib::Response& res) {
    if (impl.sampler.rounds() == 0) {
      res.status = 503;
      res.set_content("starting\n", "text/plain");
      return;
    }
    // A sampler stuck in a driver call serves stale data: say so.
    const double age = impl.sampler.SecondsSinceLastRound();
    if (age > std::max(5.0 * impl.sampler.options().interval_s, 5.0)) {
      res.status = 503;
      res.set_content("stale: the last sampling round finished " + std::to_string(age) + " s ago\n",
                      "text/plain");
      return;
    }
    res.set_content("ok\n", "text/plain");
  });
  server.Get("/v1/gpus", [&impl](const httplib::Request&, httplib::Response& res) {
    res.set_content(GpusToJson(impl.host, impl.sampler.Latest()), "application/json");
  });
  server.Get(
      R"(/v1/gpus/(\d+)/history)", [&impl](const httplib::Request& req, httplib::Response& res) {
        const std::string index = req.matches[1].str();
        int gpu = -1;
        auto [parsed_end, ec] = std::from_chars(index.data(), index.data() + index.size(), gpu);
        if (ec != std::errc() || gpu >= impl.sampler.probe().DeviceCount()) {
          res.status = 404;
          res.set_content(ErrorJson("no GPU " + req.matches[1].str() + " on this node"),
                          "application/json");
          return;
        }
        double seconds = impl.sampler.options().history_s;
        if (req.has_param("seconds")) {
          const std::string text = req.get_param_value("seconds");
          char* end = nullptr;
          seconds = std::strtod(text.c_str(), &end);
          if (end == text.c_str() || *end != '\0' || !(seconds > 0)) {
            res.status = 400;
            res.set_content(ErrorJson("seconds: '" + text + "' is not a positive number"),
                            "application/json");
            return;
          }
        }
        res.set_content(
            HistoryToJson(gpu, impl.sampler.History(gpu, seconds), impl.sampler.Aggregates(gpu)),
            "application/json");
      });
  server.Get("/v1/topology", [&impl](const httplib::Request&, httplib::Response& res) {
    res.set_content(impl.topology_json, "application/json");
  });
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404) {
      res.set_content(ErrorJson("no such endpoint: " + req.path +
                                " (try /metrics, /healthz, /v1/gpus, /v1/topology)"),
                      "application/json");
    }
  });
}

AgentServer::~AgentServer() { Stop(); }

core::Result<int> AgentServer::Bind(const ListenAddress& address) {
  httplib::Server& server = impl_->server;
  if (address.port == 0) {
    const int port = server.bind_to_any_port(address.host);
    if (port <= 0) return core::Error{"cannot listen on " + address.host + ": bind failed"};
    return port;
  }
  if (!server.bind_to_port(address.host, address.port)) {
    return core::Error{"cannot listen on " + address.host + ":" + std::to_string(address.port) +
                       " (in use, or not an address of this machine)"};
  }
  return address.port;
}

bool AgentServer::Serve() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (impl_->stop_requested) return true;
    impl_->serving = true;
  }
  impl_->server.listen_after_bind();
  impl_->finished = true;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->stop_requested;
}

void AgentServer::Stop() {
  bool serving = false;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stop_requested = true;
    serving = impl_->serving;
  }
  if (!serving) return;
  while (!impl_->server.is_running() && !impl_->finished) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  impl_->server.stop();
}

}  // namespace gpufleet::agent

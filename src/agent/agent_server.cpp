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

struct AgentServer::Impl {
  Impl(gpu::Sampler& s, HostInfo h)
      : sampler(s),
        host(std::move(h)),
        topology_json(TopologyToJson(s.probe().Topology())),
        server(net::HttpServerOptions{}) {}
  gpu::Sampler& sampler;
  HostInfo host;
  std::string topology_json;  // read once: the PCIe tree does not change while we run
  net::HttpServer server;
};

AgentServer::AgentServer(gpu::Sampler& sampler, HostInfo host)
    : impl_(std::make_unique<Impl>(sampler, std::move(host))) {
  Impl& impl = *impl_;
  net::HttpServer& server = impl.server;

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
    // Without command lines (sample_json.h): anyone who can connect reads this.
    res.set_content(GpusToJson(impl.host, impl.sampler.Latest(), -1, /*with_commands=*/false),
                    "application/json");
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
  server.SetErrorHandler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404) {
      res.set_content(ErrorJson("no such endpoint: " + req.path +
                                " (try /metrics, /healthz, /v1/gpus, /v1/topology)"),
                      "application/json");
    }
  });
}

AgentServer::~AgentServer() { impl_->server.Stop(); }

core::Result<int> AgentServer::Bind(const net::ListenAddress& address) {
  return impl_->server.Bind(address);
}

net::HttpServer& AgentServer::http() { return impl_->server; }

}  // namespace gpufleet::agent

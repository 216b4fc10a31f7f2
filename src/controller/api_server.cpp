#include "controller/api_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <charconv>
#include <cmath>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <thread>

#include "controller/auth.h"
#include "core/gpu_catalog.h"

namespace gpufleet::controller {
namespace {

using nlohmann::json;
constexpr std::size_t kMaxBody = 1 << 20;
// Workers for user requests; agents' heartbeats (/v1/agent/) have their own pool, of which up to
// 16 may hold long-poll heartbeats (controller.cpp), so users can never cost an agent its lease.
constexpr int kApiThreads = 24;
constexpr int kAgentThreads = 20;
constexpr std::size_t kMaxLogChunk = 4 << 20;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void Fail(httplib::Response& res, int status, const std::string& message,
          const std::string& field = "") {
  res.status = status;
  json body = {{"error", message}};
  if (!field.empty()) body["field"] = field;
  res.set_content(Dump(body), "application/json");
}

// Allocated against really used GPU time, from the GPUs' utilization while the job ran; null
// until the job has ended with samples (utilization is the whole GPU's: under a GPU share it
// includes the other jobs on that GPU).
json UsageJson(const store::JobRecord& j) {
  if (j.usage_samples <= 0 || j.start_ms <= 0 || j.end_ms < j.start_ms) return nullptr;
  const double gpus = j.gpu_milli < 1000 ? j.gpu_milli / 1000.0
                                         : static_cast<double>(j.gpus) * std::max(1, j.nodes);
  const double allocated_h = gpus * static_cast<double>(j.end_ms - j.start_ms) / 3.6e6;
  return {{"gpu_util_avg_pct", std::round(j.gpu_util_avg_pct * 10) / 10},
          {"gpu_mem_peak_mib", j.gpu_mem_peak_mib},
          {"gpu_samples", j.usage_samples},
          {"gpu_hours_allocated", allocated_h},
          {"gpu_hours_used", allocated_h * j.gpu_util_avg_pct / 100}};
}

json JobJson(const store::JobRecord& j) {
  return {{"id", j.id},
          {"name", j.name},
          {"user", j.user},
          {"state", std::string(store::StateName(j.state))},
          {"gpus", j.gpus},
          {"gpu_share", j.gpu_milli < 1000 ? json(j.gpu_milli / 1000.0) : json(nullptr)},
          {"gpu_type", j.gpu_type},
          {"nodes", j.nodes},
          {"priority", j.priority},
          {"queue", j.queue},
          {"argv", j.argv},
          {"workdir", j.workdir},
          {"node", j.node},
          {"gpu_indices", j.gpu_indices},
          {"submit_ms", j.submit_ms},
          {"start_ms", j.start_ms},
          {"end_ms", j.end_ms},
          {"exit_code", j.exit_code ? json(*j.exit_code) : json(nullptr)},
          {"reason", j.reason},
          {"restartable", j.restartable},
          {"cpus", j.cpu_milli > 0 ? json(j.cpu_milli / 1000.0) : json(nullptr)},
          {"memory_mib", j.memory_mib > 0 ? json(j.memory_mib) : json(nullptr)},
          {"time_limit_s", j.time_limit_s > 0 ? json(j.time_limit_s) : json(nullptr)},
          {"usage", UsageJson(j)},
          {"epoch", j.epoch}};
}

// Parses and checks a submit body; on error fills `field` and returns the message.
std::optional<std::string> ParseSubmit(const std::string& body, store::JobRecord& job,
                                       std::string& field) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "the body is not a JSON object";
  static const std::set<std::string> kKnown = {
      "name",         "argv",        "gpus",  "gpu_share",  "gpu_type",
      "nodes",        "priority",    "queue", "env",        "workdir",
      "client_token", "restartable", "cpus",  "memory_mib", "time_limit_s"};
  for (const auto& [key, value] : j.items()) {
    if (!kKnown.count(key)) {
      field = key;
      return "unknown field '" + key + "'";
    }
  }
  auto bad = [&](const char* name, const std::string& why) {
    field = name;
    return std::optional<std::string>(std::string(name) + ": " + why);
  };
  if (!j.contains("argv") || !j["argv"].is_array() || j["argv"].empty()) {
    return bad("argv", "must be a non-empty array of strings (the command to run)");
  }
  std::size_t total = 0;
  for (const json& a : j["argv"]) {
    if (!a.is_string()) return bad("argv", "every element must be a string");
    total += a.get_ref<const std::string&>().size();
    job.argv.push_back(a.get<std::string>());
  }
  if (total > 256 * 1024) return bad("argv", "longer than 256 KiB");
  if (j.contains("name")) {
    if (!j["name"].is_string() || j["name"].get_ref<const std::string&>().size() > 200) {
      return bad("name", "must be a string of at most 200 characters");
    }
    job.name = j["name"].get<std::string>();
  }
  if (job.name.empty()) job.name = job.argv[0];
  if (j.contains("gpus")) {
    if (!j["gpus"].is_number_integer() || j["gpus"].get<int64_t>() < 1 ||
        j["gpus"].get<int64_t>() > 1024) {
      return bad("gpus", "must be an integer in 1..1024");
    }
    job.gpus = j["gpus"].get<int>();
  }
  if (j.contains("gpu_share") && !j["gpu_share"].is_null()) {
    if (!j["gpu_share"].is_number() || !(j["gpu_share"].get<double>() > 0) ||
        j["gpu_share"].get<double>() > 1) {
      return bad("gpu_share", "must be a number in (0, 1]");
    }
    if (job.gpus != 1) return bad("gpu_share", "a GPU share needs gpus = 1");
    job.gpu_milli = std::max(1, static_cast<int>(j["gpu_share"].get<double>() * 1000 + 0.5));
  }
  if (j.contains("gpu_type")) {
    if (!j["gpu_type"].is_string()) return bad("gpu_type", "must be a string");
    job.gpu_type = j["gpu_type"].get<std::string>();
    if (!job.gpu_type.empty()) {
      auto models = core::GpuCatalog::Builtin().ParseSpec(job.gpu_type);
      if (!models) return bad("gpu_type", models.error());
    }
  }
  if (j.contains("nodes")) {
    if (!j["nodes"].is_number_integer() || j["nodes"].get<int64_t>() < 1) {
      return bad("nodes", "must be a positive integer");
    }
    job.nodes = j["nodes"].get<int>();
  }
  if (j.contains("priority")) {
    if (!j["priority"].is_number_integer() || std::abs(j["priority"].get<int64_t>()) > 1000000) {
      return bad("priority", "must be an integer in -1000000..1000000");
    }
    job.priority = j["priority"].get<int>();
  }
  if (j.contains("queue")) {
    if (!j["queue"].is_string() || j["queue"].get_ref<const std::string&>().empty()) {
      return bad("queue", "must be a non-empty string");
    }
    job.queue = j["queue"].get<std::string>();
  }
  if (j.contains("env")) {
    if (!j["env"].is_object()) return bad("env", "must be an object of strings");
    for (const auto& [k, v] : j["env"].items()) {
      if (!v.is_string() || k.empty() || k.find('=') != std::string::npos) {
        return bad("env", "entry '" + k + "' must be NAME: \"value\" with no '=' in NAME");
      }
      job.env.emplace_back(k, v.get<std::string>());
    }
  }
  if (j.contains("cpus")) {
    if (!j["cpus"].is_number() || !(j["cpus"].get<double>() > 0) ||
        j["cpus"].get<double>() > 4096) {
      return bad("cpus", "must be a number of cores in (0, 4096]");
    }
    job.cpu_milli =
        std::max<int64_t>(1, static_cast<int64_t>(j["cpus"].get<double>() * 1000 + 0.5));
  }
  if (j.contains("memory_mib")) {
    if (!j["memory_mib"].is_number_integer() || j["memory_mib"].get<int64_t>() < 1 ||
        j["memory_mib"].get<int64_t>() > (int64_t{1} << 32)) {
      return bad("memory_mib", "must be a positive integer (MiB)");
    }
    job.memory_mib = j["memory_mib"].get<int64_t>();
  }
  if (j.contains("time_limit_s")) {
    if (!j["time_limit_s"].is_number_integer() || j["time_limit_s"].get<int64_t>() < 1 ||
        j["time_limit_s"].get<int64_t>() > 366 * 86400) {
      return bad("time_limit_s", "must be an integer number of seconds in 1..31622400");
    }
    job.time_limit_s = j["time_limit_s"].get<int64_t>();
  }
  if (j.contains("restartable")) {
    if (!j["restartable"].is_boolean()) return bad("restartable", "must be true or false");
    job.restartable = j["restartable"].get<bool>();
  }
  if (j.contains("client_token")) {
    if (!j["client_token"].is_string() ||
        j["client_token"].get_ref<const std::string&>().size() > 128) {
      return bad("client_token", "must be a string of at most 128 characters");
    }
    job.client_token = j["client_token"].get<std::string>();
  }
  if (j.contains("workdir")) {
    if (!j["workdir"].is_string() || (!j["workdir"].get_ref<const std::string&>().empty() &&
                                      j["workdir"].get_ref<const std::string&>()[0] != '/')) {
      return bad("workdir", "must be an absolute path");
    }
    job.workdir = j["workdir"].get<std::string>();
  }
  return std::nullopt;
}

std::optional<int64_t> ParseId(const std::string& text) {
  int64_t id = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return id;
}

}  // namespace

struct ApiServer::Impl {
  explicit Impl(Controller& c)
      : controller(c),
        server(net::HttpServerOptions{.threads = kApiThreads,
                                      .max_body_bytes = kMaxBody,
                                      .keep_alive_s = 5,
                                      .io_timeout_s = 10,
                                      .reserved_prefix = "/v1/agent/",
                                      .reserved_threads = kAgentThreads}) {}
  Controller& controller;
  net::HttpServer server;
  std::atomic<int64_t> requests{0};

  // The caller's user, or nothing after answering 401.
  std::optional<store::UserRecord> Authenticate(const httplib::Request& req,
                                                httplib::Response& res) {
    const std::string header = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (header.rfind(prefix, 0) != 0 || header.size() == prefix.size()) {
      Fail(res, 401,
           "missing bearer token: pass GPUFLEET_TOKEN or use the token file that "
           "`gpufleet up` wrote in its data directory");
      return std::nullopt;
    }
    auto user = controller.store().UserByToken(Sha256Hex(header.substr(prefix.size())));
    if (!user) {
      Fail(res, 503, user.error());
      return std::nullopt;
    }
    if (!user.value()) {
      Fail(res, 401, "unknown token");
      return std::nullopt;
    }
    return *user.value();
  }
  // The job if it exists and the caller may see it; else answers 404.
  std::optional<store::JobRecord> VisibleJob(const std::string& id_text,
                                             const store::UserRecord& user,
                                             httplib::Response& res) {
    auto id = ParseId(id_text);
    if (!id) {
      Fail(res, 400, "job id '" + id_text + "' is not a number", "id");
      return std::nullopt;
    }
    auto job = controller.store().GetJob(*id);
    if (!job) {
      Fail(res, 503, job.error());
      return std::nullopt;
    }
    if (!job.value() || (!user.admin && job.value()->user != user.name)) {
      Fail(res, 404, "no job " + id_text);  // another user's job does not exist for you
      return std::nullopt;
    }
    return *job.value();
  }
};

ApiServer::ApiServer(Controller& controller) : impl_(std::make_unique<Impl>(controller)) {
  Impl& impl = *impl_;
  net::HttpServer& server = impl.server;
  // Before any body byte is read, /v1 requests need a known bearer token (handlers still check
  // whose it is); /healthz and /metrics stay open.
  server.SetAuthHook([&impl](const httplib::Request& req, httplib::Response& res) {
    return req.path.rfind("/v1/", 0) != 0 || impl.Authenticate(req, res).has_value();
  });
  server.SetPreRoutingHandler([&impl](const httplib::Request&, httplib::Response&) {
    ++impl.requests;
    return httplib::Server::HandlerResponse::Unhandled;
  });

  server.Post("/v1/jobs", [&impl](const httplib::Request& req, httplib::Response& res) {
    auto user = impl.Authenticate(req, res);
    if (!user) return;
    store::JobRecord job;
    std::string field;
    if (auto error = ParseSubmit(req.body, job, field)) {
      Fail(res, 400, *error, field);
      return;
    }
    job.user = user->name;
    if (auto why = impl.controller.Unrunnable(job)) {
      Fail(res, 400, why->first + ": " + why->second, why->first);
      return;
    }
    auto id = impl.controller.Submit(std::move(job));
    if (!id) {
      Fail(res, 503, id.error());
      return;
    }
    res.status = 201;
    res.set_content(Dump({{"id", id.value()}}), "application/json");
  });
  server.Get("/v1/jobs", [&impl](const httplib::Request& req, httplib::Response& res) {
    auto user = impl.Authenticate(req, res);
    if (!user) return;
    store::JobFilter filter;
    filter.user = req.has_param("user") ? req.get_param_value("user") : user->name;
    if (filter.user == "*" || filter.user == "all") filter.user.clear();
    if (!user->admin && filter.user != user->name) {
      Fail(res, 403, "only admins list other users' jobs", "user");
      return;
    }
    if (req.has_param("state")) {
      filter.state = store::ParseState(req.get_param_value("state"));
      if (!filter.state) {
        Fail(res, 400, "unknown state '" + req.get_param_value("state") + "'", "state");
        return;
      }
    }
    for (const char* name : {"after", "limit"}) {
      if (!req.has_param(name)) continue;
      auto v = ParseId(req.get_param_value(name));
      if (!v || *v < 0) {
        Fail(res, 400, std::string(name) + " must be a non-negative integer", name);
        return;
      }
      if (std::string_view(name) == "after") {
        filter.after_id = *v;
      } else {
        filter.limit = static_cast<int>(std::min<int64_t>(*v, 10000));
      }
    }
    auto jobs = impl.controller.store().ListJobs(filter);
    if (!jobs) {
      Fail(res, 503, jobs.error());
      return;
    }
    json out = json::array();
    for (const store::JobRecord& j : jobs.value()) out.push_back(JobJson(j));
    res.set_content(Dump(out), "application/json");
  });
  server.Get(R"(/v1/jobs/([^/]+))", [&impl](const httplib::Request& req, httplib::Response& res) {
    auto user = impl.Authenticate(req, res);
    if (!user) return;
    if (auto job = impl.VisibleJob(req.matches[1], *user, res)) {
      // One job comes with its history: each state change, with when and why.
      json out = JobJson(*job);
      json events = json::array();
      if (auto history = impl.controller.store().Events(job->id)) {
        for (const store::JobEvent& e : history.value()) {
          events.push_back({{"time_ms", e.time_ms}, {"what", e.what}, {"detail", e.detail}});
        }
      }
      out["events"] = std::move(events);
      res.set_content(Dump(out), "application/json");
    }
  });
  server.Post(
      R"(/v1/jobs/([^/]+)/cancel)", [&impl](const httplib::Request& req, httplib::Response& res) {
        auto user = impl.Authenticate(req, res);
        if (!user) return;
        auto job = impl.VisibleJob(req.matches[1], *user, res);
        if (!job) return;
        auto state = impl.controller.Cancel(job->id, NowMs());
        if (!state) {
          Fail(res, 503, state.error());
          return;
        }
        res.set_content(
            Dump({{"id", job->id}, {"state", std::string(store::StateName(state.value()))}}),
            "application/json");
      });
  server.Get(R"(/v1/jobs/([^/]+)/logs)",
             [&impl](const httplib::Request& req, httplib::Response& res) {
               auto user = impl.Authenticate(req, res);
               if (!user) return;
               auto job = impl.VisibleJob(req.matches[1], *user, res);
               if (!job) return;
               int64_t offset = 0;
               if (req.has_param("offset")) {
                 auto v = ParseId(req.get_param_value("offset"));
                 if (!v || *v < 0) {
                   Fail(res, 400, "offset must be a non-negative integer", "offset");
                   return;
                 }
                 offset = *v;
               }
               std::ifstream in(impl.controller.LogPath(job->id), std::ios::binary);
               std::string chunk;
               int64_t size = 0;
               if (in) {
                 in.seekg(0, std::ios::end);
                 size = static_cast<int64_t>(in.tellg());
                 if (offset < size) {
                   in.seekg(offset);
                   chunk.resize(static_cast<std::size_t>(
                       std::min<int64_t>(size - offset, static_cast<int64_t>(kMaxLogChunk))));
                   in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
                 }
               }
               res.set_header("X-Log-Size", std::to_string(size));
               res.set_header("X-Job-State", std::string(store::StateName(job->state)));
               res.set_content(chunk, "text/plain");
             });
  server.Get("/v1/nodes", [&impl](const httplib::Request& req, httplib::Response& res) {
    if (!impl.Authenticate(req, res)) return;
    json out = json::array();
    for (const NodeView& n : impl.controller.Nodes()) {
      out.push_back({{"name", n.name},
                     {"address", n.address},
                     {"gpus", n.gpus},
                     {"free_gpus", n.free_gpus},
                     {"gpu_model", n.gpu_model},
                     {"simulated", n.simulated},
                     {"local", n.local},
                     {"running_jobs", n.running_jobs},
                     {"state", n.state},
                     {"epoch", n.epoch},
                     {"last_seen_ms", n.last_seen_ms}});
    }
    res.set_content(Dump(out), "application/json");
  });
  server.Get("/v1/gpus", [&impl](const httplib::Request& req, httplib::Response& res) {
    if (!impl.Authenticate(req, res)) return;
    json out = json::array();
    for (const NodeView& n : impl.controller.Nodes()) {
      json samples =
          n.samples_json.empty() ? json(nullptr) : json::parse(n.samples_json, nullptr, false);
      out.push_back({{"node", n.name},
                     {"state", n.state},
                     {"last_seen_ms", n.last_seen_ms},
                     {"samples", samples.is_discarded() ? json(nullptr) : samples}});
    }
    res.set_content(Dump(out), "application/json");
  });
  server.Post("/v1/agent/heartbeat", [&impl](const httplib::Request& req, httplib::Response& res) {
    auto user = impl.Authenticate(req, res);
    if (!user) return;
    if (!user->admin) {
      Fail(res, 403, "agents need an admin token (the one in the controller's data directory)");
      return;
    }
    auto beat = net::ParseHeartbeat(req.body);
    if (!beat) {
      const std::string& why = beat.error();
      Fail(res, 400, why, why.substr(0, why.find(':')));
      return;
    }
    auto reply = impl.controller.Heartbeat(beat.value(), NowMs());
    if (!reply) {
      const bool store_failed = reply.error().rfind("store:", 0) == 0;
      Fail(res, store_failed ? 503 : 400, reply.error(), store_failed ? "" : "node");
      return;
    }
    res.set_content(net::ToJson(reply.value()), "application/json");
  });
  server.Get("/v1/queue", [&impl](const httplib::Request& req, httplib::Response& res) {
    if (!impl.Authenticate(req, res)) return;
    const ControllerStats s = impl.controller.Stats();
    int gpus = 0, free_gpus = 0, ready = 0, lost = 0;
    for (const NodeView& n : impl.controller.Nodes()) {
      if (n.state == "READY") {
        ++ready;
        gpus += n.gpus;
        free_gpus += n.free_gpus;
      } else if (n.state == "LOST") {
        ++lost;
      }
    }
    res.set_content(Dump({{"waiting", s.waiting},
                          {"running", s.running},
                          {"started", s.started},
                          {"finished", s.finished},
                          {"passes", s.passes},
                          {"nodes_ready", ready},
                          {"nodes_lost", lost},
                          {"gpus", gpus},
                          {"free_gpus", free_gpus}}),
                    "application/json");
  });
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server.Get("/metrics", [&impl](const httplib::Request&, httplib::Response& res) {
    const ControllerStats s = impl.controller.Stats();
    std::string out;
    auto metric = [&](const char* name, const char* type, const char* help, int64_t value) {
      out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
             name + " " + std::to_string(value) + "\n";
    };
    metric("gpufleet_controller_jobs_waiting", "gauge", "Jobs waiting to start.", s.waiting);
    metric("gpufleet_controller_jobs_running", "gauge", "Jobs running.", s.running);
    metric("gpufleet_controller_jobs_started_total", "counter", "Jobs started.", s.started);
    metric("gpufleet_controller_jobs_finished_total", "counter", "Jobs that ended.", s.finished);
    metric("gpufleet_controller_scheduling_passes_total", "counter", "Scheduling passes.",
           s.passes);
    metric("gpufleet_controller_nodes_lost_total", "counter",
           "Nodes declared lost after missing their lease.", s.nodes_lost);
    metric("gpufleet_controller_jobs_preempted_total", "counter",
           "Running jobs stopped to make room for jobs the queue policy ranks higher.",
           s.preempted);
    metric("gpufleet_controller_heartbeats_total", "counter", "Agent heartbeats received.",
           s.heartbeats);
    metric("gpufleet_controller_http_requests_total", "counter", "HTTP requests received.",
           impl.requests.load());
    res.set_content(out, "text/plain; version=0.0.4");
  });
  server.SetErrorHandler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404 && res.body.empty()) {
      Fail(res, 404, "no such endpoint: " + req.method + " " + req.path);
    } else if (res.status == 413) {
      Fail(res, 413, "request body too large (the limit is 1 MiB)");
    }
  });
}

ApiServer::~ApiServer() { impl_->server.Stop(); }

core::Result<int> ApiServer::Bind(const net::ListenAddress& address) {
  return impl_->server.Bind(address);
}

net::HttpServer& ApiServer::http() { return impl_->server; }

}  // namespace gpufleet::controller

#include "controller/api_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <thread>

#include "controller/admin_routes.h"
#include "controller/advice_routes.h"
#include "controller/api_common.h"
#include "controller/auth.h"
#include "controller/event_hub.h"
#include "controller/queue_routes.h"
#include "controller/scale_routes.h"
#include "controller/standby.h"
#include "controller/submit_request.h"
#include "controller/ui_routes.h"
#include "controller/ui_sessions.h"
#include "controller/write_rate.h"
#include "core/gpu_catalog.h"
#include "net/host_usage_json.h"

namespace gpufleet::controller {
namespace {

using nlohmann::json;
constexpr std::size_t kMaxBody = 1 << 20;
// Workers for user requests; agents' heartbeats (/v1/agent/) have their own pool, of which up to
// 16 may hold long-poll heartbeats (controller.cpp), so users can never cost an agent its lease.
constexpr int kApiThreads = 24;
constexpr int kAgentThreads = 20;
constexpr std::size_t kMaxLogChunk = 4 << 20;
// A job's events in one answer of GET /v1/jobs/ID: the latest 1,000 unless asked otherwise (a job
// requeued for months could have a history too long for one answer).
constexpr int64_t kDefaultEventPage = 1000;
constexpr int64_t kMaxEventPage = 10000;

using api::Dump;
using api::Fail;  // Fail(res, error): the status follows from the error's code
using api::ParseFlag;
using api::ParseId;

// Allocated against really used GPU time, from the GPUs' utilization while the job ran; null
// until the job has ended with samples (utilization is the whole GPU's: under a GPU share it
// includes the other jobs on that GPU).
json UsageJson(const store::JobRecord& j) {
  if (j.usage_samples <= 0 || j.start_ms <= 0 || j.end_ms < j.start_ms) return nullptr;
  const double allocated_h = j.GpusPlaced() * static_cast<double>(j.end_ms - j.start_ms) / 3.6e6;
  return {{"gpu_util_avg_pct", std::round(j.gpu_util_avg_pct * 10) / 10},
          {"gpu_mem_peak_mib", j.gpu_mem_peak_mib},
          {"gpu_samples", j.usage_samples},
          {"gpu_hours_allocated", allocated_h},
          {"gpu_hours_used", allocated_h * j.gpu_util_avg_pct / 100}};
}

// GET /v1/jobs reads its rows this many at a time, and its answer ends before the job that would
// take it past this many bytes (it holds one job at least).
constexpr int kListChunk = 100;
constexpr int kFirstListChunk = 16;
constexpr std::size_t kListBudgetBytes = std::size_t{16} << 20;

json JobJson(const store::JobRecord& j) {
  return {{"id", j.id},
          {"name", j.name},
          {"user", j.user},
          {"state", std::string(store::StateName(j.state))},
          {"gpus", j.gpus},
          {"min_gpus", j.min_gpus > 0 ? json(j.min_gpus) : json(nullptr)},
          {"gpu_share", j.GpuShare() < 1 ? json(j.GpuShare()) : json(nullptr)},
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
          {"image", j.container.empty() ? json(nullptr) : json(j.container.image)},
          {"mounts",
           [&] {
             json mounts = json::array();
             for (const core::BindMount& m : j.container.mounts) {
               mounts.push_back(core::BindMountText(m));
             }
             return mounts;
           }()},
          {"usage", UsageJson(j)},
          {"host_usage", net::HostUsageJson(j.host_usage)},
          {"oom_killed", j.host_usage.has(core::UsageFigure::kOomKills)
                             ? json(j.host_usage.get(core::UsageFigure::kOomKills) > 0)
                             : json(nullptr)},
          {"epoch", j.epoch}};
}

std::string ShortNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

}  // namespace

struct ApiServer::Impl {
  Impl(Controller& c, const ApiServerOptions& o)
      : controller(c),
        server(net::HttpServerOptions{.threads = kApiThreads,
                                      .max_body_bytes = kMaxBody,
                                      .keep_alive_s = 5,
                                      .io_timeout_s = 10,
                                      .reserved_prefix = "/v1/agent/",
                                      .reserved_threads = kAgentThreads,
                                      .allowed_hosts = o.allowed_hosts,
                                      .tls = o.tls}),
        write_rate(o.user_write_rate, o.user_write_burst) {}
  Controller& controller;
  UiSessions sessions;
  EventHub events{controller, &sessions};
  net::HttpServer server;
  WriteRateLimiter write_rate;
  std::atomic<int64_t> requests{0};
  std::atomic<const Autoscaler*> autoscaler{nullptr};

  std::optional<store::UserRecord> Authenticate(const httplib::Request& req,
                                                httplib::Response& res) {
    return api::AuthenticateUser(controller.store(), req, res, NowMs());
  }
  std::optional<store::JobRecord> VisibleJob(const std::string& id_text,
                                             const store::UserRecord& user,
                                             httplib::Response& res) {
    return api::VisibleJob(controller.store(), id_text, user, res);
  }
};

ApiServer::ApiServer(Controller& controller, const ApiServerOptions& options)
    : impl_(std::make_unique<Impl>(controller, options)) {
  Impl& impl = *impl_;
  net::HttpServer& server = impl.server;
  // Before any body byte is read, /v1 requests need a known credential of any kind (handlers
  // check whose it is and what it may do); /healthz and /metrics stay open.
  const bool secure_cookie = options.tls != nullptr || options.behind_https_proxy;
  server.SetAuthHook([&impl, secure_cookie](httplib::Request& req, httplib::Response& res) {
    if (req.path.rfind("/v1/", 0) == 0) {
      // The dashboard's session cookie stands for its token (with a CSRF check); agents'
      // paths take bearer tokens only.
      if (req.path.rfind("/v1/agent/", 0) != 0 &&
          !AdmitSession(impl.sessions, secure_cookie, req, res, NowMs())) {
        return false;
      }
      const int64_t now_ms = NowMs();
      auto caller = api::Authenticate(impl.controller.store(), req, res, now_ms);
      if (!caller) return false;
      if (caller->kind == store::TokenKind::kUser && !caller->admin && req.method != "GET" &&
          req.method != "HEAD" && impl.write_rate.enabled()) {
        if (const int64_t wait_ms = impl.write_rate.Take(caller->name, now_ms); wait_ms > 0) {
          const int64_t wait_s = (wait_ms + 999) / 1000;
          res.set_header("Retry-After", std::to_string(wait_s));
          Fail(res, 429,
               "too many writing requests from " + caller->name + ": at most " +
                   ShortNumber(impl.write_rate.per_s()) + " a second (" +
                   std::to_string(impl.write_rate.burst()) +
                   " at once; the server's --user-write-rate and --user-write-burst); try again "
                   "in " +
                   std::to_string(wait_s) + " s");
          return false;
        }
      }
      return true;
    }
    // Logging in and out of the dashboard take a small body; nothing else outside /v1 does:
    // nothing is read for anyone without a token. Those two bodies are judged on the head: a
    // larger or chunked one is refused before a byte of it is read (else anyone could make the
    // server hold the 1 MiB body limit per connection).
    if (req.method == "POST" && (req.path == "/ui/login" || req.path == "/ui/logout")) {
      const std::string length = req.get_header_value("Content-Length");
      if (req.has_header("Transfer-Encoding") || length.size() > 9 ||
          std::strtoll(length.c_str(), nullptr, 10) > static_cast<long long>(kMaxLoginBody)) {
        Fail(res, 413,
             "token: a login or logout body is at most " + std::to_string(kMaxLoginBody) +
                 " bytes, with a Content-Length",
             "token");
        return false;
      }
      return true;
    }
    if (req.method != "GET" && req.method != "HEAD") {
      Fail(res, 405, "only GET and HEAD outside /v1");
      return false;
    }
    return true;
  });
  server.SetPreRoutingHandler([&impl, options](const httplib::Request& req,
                                               httplib::Response& res) {
    ++impl.requests;
    res.set_header("X-Content-Type-Options", "nosniff");
    // The API's answers are one caller's view (their jobs, their logs; the dashboard's cookie
    // becomes a bearer token here, which a shared cache would not see): never stored.
    if (req.path.rfind("/v1/", 0) == 0) res.set_header("Cache-Control", "no-store");
    // A controller whose lease ran out acts on nothing: it answers as a standby at once, before
    // any other controller can have taken over (server/leader_lease.h).
    if (options.leading && req.path != "/healthz" && !options.leading()) {
      AnswerStandby(res, options.leader ? options.leader() : store::LeaderInfo{});
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  server.Post("/v1/jobs", [&impl](const httplib::Request& req, httplib::Response& res) {
    auto user = impl.Authenticate(req, res);
    if (!user) return;
    auto parsed = ParseSubmitRequest(req.body);
    if (!parsed) {
      Fail(res, 400, parsed.error(), parsed.failure().field);
      return;
    }
    store::JobRecord job = std::move(parsed).value();
    job.user = user->name;
    // How high a priority a user may give a job is the admin's choice, not the submitter's.
    if (!user->admin && job.priority > impl.controller.MaxUserPriority(user->name)) {
      Fail(res, 403,
           "priority: " + std::to_string(job.priority) + " is above the " +
               std::to_string(impl.controller.MaxUserPriority(user->name)) +
               " this user may set (an admin raises it with --max-priority)",
           "priority");
      return;
    }
    if (auto why = impl.controller.Unrunnable(job)) {
      Fail(res, *why);
      return;
    }
    auto id = impl.controller.Submit(std::move(job), /*within_cap=*/!user->admin);
    if (!id) {
      Fail(res, id.failure());
      return;
    }
    res.status = 201;
    res.set_content(Dump({{"id", id.value()}}), "application/json");
  });
  server.Get("/v1/jobs", [&impl](const httplib::Request& req, httplib::Response& res) {
    auto user = impl.Authenticate(req, res);
    if (!user) return;
    store::JobFilter filter;
    // ?user=all (or *) asks for every user's jobs; without ?user, the caller's own, whatever
    // their name (a user named "all", made before that name was reserved, sees theirs).
    const bool asked_user = req.has_param("user");
    filter.user = asked_user ? req.get_param_value("user") : user->name;
    if (asked_user && (filter.user == "*" || filter.user == "all")) filter.user.clear();
    if (!user->admin && filter.user != user->name) {
      Fail(res, 403, "only admins list other users' jobs", "user");
      return;
    }
    if (req.has_param("state") && !req.get_param_value("state").empty()) {
      filter.state = store::ParseState(req.get_param_value("state"));
      if (!filter.state) {
        Fail(res, 400, "unknown state '" + req.get_param_value("state") + "'", "state");
        return;
      }
    }
    for (const char* name : {"queue", "gpu_type"}) {
      if (!req.has_param(name)) continue;
      const std::string value = req.get_param_value(name);
      if (value.size() > 64) {
        Fail(res, 400, std::string(name) + ": at most 64 characters", name);
        return;
      }
      (std::string_view(name) == "queue" ? filter.queue : filter.gpu_type) = value;
    }
    if (req.has_param("sort")) {
      auto key = store::ParseSortKey(req.get_param_value("sort"));
      if (!key) {
        Fail(res, 400,
             "sort: one of id, submit, start, end, gpus, user, state, queue, priority", "sort");
        return;
      }
      filter.sort = *key;
    }
    if (req.has_param("order")) {
      const std::string order = req.get_param_value("order");
      if (order != "asc" && order != "desc") {
        Fail(res, 400, "order: asc or desc", "order");
        return;
      }
      filter.descending = order == "desc";
    }
    if (req.has_param("offset")) {
      auto v = ParseId(req.get_param_value("offset"));
      if (!v || *v < 0 || *v > 100'000'000) {
        Fail(res, 400, "offset must be an integer in 0..100000000", "offset");
        return;
      }
      filter.offset = *v;
    }
    for (const char* name : {"after", "limit"}) {
      if (!req.has_param(name)) continue;
      auto v = ParseId(req.get_param_value(name));
      const bool is_limit = std::string_view(name) == "limit";
      if (!v || *v < (is_limit ? 1 : 0) || (is_limit && *v > 10000)) {
        Fail(res, 400,
             std::string(name) +
                 (is_limit ? " must be an integer in 1..10000" : " must be a non-negative integer"),
             name);
        return;
      }
      if (!is_limit) {
        filter.after_id = *v;
      } else {
        filter.limit = static_cast<int>(*v);
      }
    }
    bool want_total = false;
    if (req.has_param("total")) {
      const std::optional<bool> flag = ParseFlag(req.get_param_value("total"));
      if (!flag) {
        Fail(res, 400, "total: 0, 1, true or false", "total");
        return;
      }
      want_total = *flag;
    }
    if (want_total) {
      auto total = impl.controller.store().CountJobs(filter);
      if (!total) {
        api::Unavailable(res, total.error());
        return;
      }
      res.set_header("X-Total-Count", std::to_string(total.value()));
    }
    // Read in chunks, and ended before the job that would take it past kListBudgetBytes (one job
    // at least): 10,000 jobs of 256 KiB of argv each would otherwise be gigabytes in memory. A
    // cut answer says so in X-Truncated; the next page starts after its last job (or at offset +
    // its size). A list of more than one chunk is read in several queries: a job that changes
    // state or sort key between them may be missed or come twice, as with any paging by offset;
    // one that would come twice is left out the second time.
    std::string body = "[";
    int listed = 0;
    int64_t read = 0;
    bool truncated = false;
    std::set<int64_t> listed_ids;
    // The first chunk is small; each later one holds as many rows as the budget left holds at
    // the largest row seen (up to kListChunk): a user with many jobs of 512 KiB of argv each is
    // not read 100 at a time. (The answer has no env: it is not read.)
    std::size_t largest_row = 0;
    while (listed < filter.limit && !truncated) {
      store::JobFilter chunk = filter;
      chunk.without_env = true;
      chunk.offset = filter.offset + read;
      std::size_t rows = kFirstListChunk;
      if (largest_row > 0) {
        const std::size_t room =
            kListBudgetBytes > body.size() ? kListBudgetBytes - body.size() : 0;
        rows = std::min<std::size_t>(room / largest_row + 1, kListChunk);
      }
      chunk.limit = std::min(static_cast<int>(rows), filter.limit - listed);
      auto jobs = impl.controller.store().ListJobs(chunk);
      if (!jobs) {
        api::Unavailable(res, jobs.error());
        return;
      }
      for (const store::JobRecord& j : jobs.value()) {
        if (!listed_ids.insert(j.id).second) continue;
        std::string row = Dump(JobJson(j));
        largest_row = std::max(largest_row, row.size());
        if (listed > 0 && body.size() + row.size() + 2 > kListBudgetBytes) {
          truncated = true;
          break;
        }
        if (listed > 0) body += ',';
        body += row;
        ++listed;
      }
      read += static_cast<int64_t>(jobs.value().size());
      if (static_cast<int>(jobs.value().size()) < chunk.limit) break;
    }
    body += ']';
    if (truncated) res.set_header("X-Truncated", "true");
    res.set_content(std::move(body), "application/json");
  });
  server.Get(R"(/v1/jobs/([^/]+))", [&impl](const httplib::Request& req, httplib::Response& res) {
    auto user = impl.Authenticate(req, res);
    if (!user) return;
    if (auto job = impl.VisibleJob(req.matches[1], *user, res)) {
      // One job comes with its history: each state change, with when and why; the latest
      // kDefaultEventPage (events_limit, up to kMaxEventPage), older ones by events_before, and
      // those since a reader's last one by events_after.
      auto asked = api::ParseEventPage(req, res, "events_limit", "events_before", "events_after",
                                       kDefaultEventPage, kMaxEventPage);
      if (!asked) return;
      json out = JobJson(*job);
      json events = json::array();
      bool more = false;
      auto history = api::ReadEventPage(impl.controller.store(), job->id, *asked, more);
      if (!history) return api::Unavailable(res, history.error());
      for (const store::JobEvent& e : history.value()) {
        events.push_back({{"id", e.id},
                          {"time_ms", e.time_ms},
                          {"what", e.what},
                          {"detail", e.detail},
                          {"actor", e.actor}});
      }
      out["events"] = std::move(events);
      if (more && asked->after >= 0) out["events_newer_after"] = history.value().back().id;
      if (more && asked->after < 0) out["events_older_before"] = history.value().front().id;
      // Its predicted run time while it waits or runs, and how good predictions have been. A
      // prediction learnt from other users' jobs (their mean run time, and its changes as their
      // jobs end) and the fleet's figures are an admin's to see; a user sees only the basis.
      auto p = impl.controller.Prediction(job->id);
      if (p && !user->admin && p->MixesOtherUsersJobs()) {
        out["predicted_runtime_s"] = nullptr;
        out["prediction_basis"] = p->basis;
        out["prediction_hidden"] = "learnt from other users' jobs: shown to admins only";
      } else if (p) {
        out["predicted_runtime_s"] = std::round(p->seconds * 10) / 10;
        out["prediction_basis"] = p->basis;
        out["prediction_samples"] = p->samples;
      } else {
        out["predicted_runtime_s"] = nullptr;
      }
      if (p && user->admin) {
        const Controller::PredictorView v = impl.controller.Predictor();
        out["predictor"] = {
            {"learnt_jobs", v.learnt},
            {"checked_jobs", v.checked},
            {"median_relative_error", std::round(v.median_relative_error * 1000) / 1000},
            {"mean_absolute_error_s", std::round(v.mean_absolute_error_s * 10) / 10}};
      }
      res.set_content(Dump(out), "application/json");
    }
  });
  server.Post(
      R"(/v1/jobs/([^/]+)/cancel)", [&impl](const httplib::Request& req, httplib::Response& res) {
        auto user = impl.Authenticate(req, res);
        if (!user) return;
        auto job = impl.VisibleJob(req.matches[1], *user, res);
        if (!job) return;
        // An ended job's cancel changes nothing and records nothing (a loop of them would grow
        // its history and the store without bound).
        auto state = core::HasEnded(job->state) ? core::Result<store::JobState>(job->state)
                                                : impl.controller.Cancel(job->id, NowMs());
        if (!state) {
          api::Unavailable(res, state.error());
          return;
        }
        if (!core::HasEnded(job->state)) {
          (void)impl.controller.store().Audit(job->id, user->name, "cancel requested", "", NowMs());
        }
        res.set_content(
            Dump({{"id", job->id}, {"state", std::string(store::StateName(state.value()))}}),
            "application/json");
      });
  // An ended job removed for good by its owner or an admin, as --job-retention does later: so a
  // user at --max-job-bytes-per-user can make room, and a job's argv, env and logs can go.
  server.Delete(
      R"(/v1/jobs/([^/]+))", [&impl](const httplib::Request& req, httplib::Response& res) {
        auto user = impl.Authenticate(req, res);
        if (!user) return;
        auto job = impl.VisibleJob(req.matches[1], *user, res);
        if (!job) return;
        auto removed = impl.controller.RemoveEndedJob(job->id, NowMs());
        if (!removed) {
          if (removed.failure().field == "state") {
            Fail(res, 409, removed.error(), "state");
          } else {
            Fail(res, removed.failure());
          }
          return;
        }
        if (removed.value()) {  // in the admins' audit (its own history went with it)
          (void)impl.controller.store().Audit(0, user->name, "job removed",
                                              "job " + std::to_string(job->id) + " of " + job->user,
                                              NowMs());
        }
        res.set_content(Dump({{"id", job->id}, {"removed", removed.value()}}), "application/json");
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
               // Removed by retention (controller/log_retention.h): the note says why, as
               // the log's text, and a header says so to scripts. Only ended jobs' logs are
               // removed: a note beside a live job is an earlier job's of the same id (a store
               // made anew beside this data dir), not to be shown.
               if (!in && core::HasEnded(job->state)) {
                 if (auto note = impl.controller.Logs().RemovedNote(job->id)) {
                   res.set_header("X-Log-Removed", "1");
                   size = static_cast<int64_t>(note->size());
                   // Whole, and only to a reader at its start (one that was reading the log
                   // itself gets nothing more: `X-Log-Removed` tells it why).
                   if (offset == 0) chunk = *note;
                 }
               }
               res.set_header("X-Log-Size", std::to_string(size));
               res.set_header("X-Job-State", std::string(store::StateName(job->state)));
               res.set_content(chunk, "text/plain");
             });
  server.Get("/v1/nodes", [&impl](const httplib::Request& req, httplib::Response& res) {
    auto user = impl.Authenticate(req, res);
    if (!user) return;
    json out = json::array();
    for (const NodeView& n : impl.controller.Nodes()) {
      json drained = json::array();
      for (const NodeView::DrainedGpu& d : n.drained) {
        drained.push_back({{"gpu", d.gpu},
                           {"cause", d.cause},
                           {"reason", d.reason},
                           {"by", d.by},
                           {"since_ms", d.since_ms}});
      }
      out.push_back({{"name", n.name},
                     {"drained", std::move(drained)},
                     {"address", n.address},
                     {"gpus", n.gpus},
                     {"free_gpus", n.free_gpus},
                     {"gpu_model", n.gpu_model},
                     {"simulated", n.simulated},
                     {"local", n.local},
                     {"limits", n.limits},
                     {"limits_why", n.limits_why},
                     {"images", user->admin ? n.images
                                            : api::ImagesShownToUsers(
                                                  n.images, impl.controller.options().containers)},
                     {"running_jobs", n.running_jobs},
                     {"state", n.state},
                     {"epoch", n.epoch},
                     {"last_seen_ms", n.last_seen_ms},
                     {"idle_since_ms", n.idle_since_ms}});
      // The autoscaler's nodes: their group and price (null for nodes it does not hold).
      const Autoscaler* a = impl.autoscaler.load();
      const auto managed = a ? a->Managed(n.name) : std::nullopt;
      out.back()["group"] = managed ? json(managed->group) : json(nullptr);
      out.back()["spot"] = managed ? json(managed->spot) : json(nullptr);
      out.back()["price_per_hour"] = managed ? json(managed->price_per_hour) : json(nullptr);
    }
    res.set_content(Dump(out), "application/json");
  });
  server.Get("/v1/gpus", [&impl](const httplib::Request& req, httplib::Response& res) {
    const auto user = impl.Authenticate(req, res);
    if (!user) return;
    // A non-admin's live jobs (a SCHEDULED one may have processes already), whose processes
    // they see whole: their ids only, not their rows.
    std::set<std::string> own_jobs;
    if (!user->admin) {
      auto ids = impl.controller.store().LiveJobIdsOf(user->name);
      if (!ids) {
        api::Unavailable(res, ids.error());
        return;
      }
      for (int64_t id : ids.value()) own_jobs.insert(std::to_string(id));
    }
    json out = json::array();
    for (const NodeView& n : impl.controller.Nodes()) {
      json samples =
          n.samples_json.empty() ? json(nullptr) : json::parse(n.samples_json, nullptr, false);
      if (!user->admin && !samples.is_discarded()) api::HideOthersProcesses(samples, own_jobs);
      out.push_back({{"node", n.name},
                     {"state", n.state},
                     {"last_seen_ms", n.last_seen_ms},
                     {"samples", samples.is_discarded() ? json(nullptr) : samples}});
    }
    res.set_content(Dump(out), "application/json");
  });
  server.Post("/v1/agent/heartbeat", [&impl](const httplib::Request& req, httplib::Response& res) {
    auto caller = api::Authenticate(impl.controller.store(), req, res, NowMs());
    if (!caller) return;
    if (!(caller->kind == store::TokenKind::kNode ||
          (caller->kind == store::TokenKind::kUser && caller->admin))) {
      Fail(res, 403,
           "agents need their node's credential (`gpufleet agent --join-token`) or an admin "
           "token");
      return;
    }
    auto beat = net::ParseHeartbeat(req.body);
    if (!beat) {
      Fail(res, beat.failure());
      return;
    }
    // A node credential acts as its own node only: never another node's jobs.
    if (caller->kind == store::TokenKind::kNode && beat.value().node != caller->node) {
      Fail(res, 403, "this credential belongs to node " + caller->node, "node");
      return;
    }
    auto reply = impl.controller.Heartbeat(beat.value(), NowMs());
    if (!reply) {
      Fail(res, reply.failure());
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
  AddQueueRoutes(server, impl.controller);
  {
    auto assets = ui::AssetSet::Embedded();
    if (!options.ui_dir.empty()) {
      if (auto from_dir = ui::AssetSet::FromDirectory(options.ui_dir)) assets = from_dir;
    }
    AddUiRoutes(server,
                UiRouteContext{impl.controller, impl.sessions, impl.events, assets, secure_cookie});
  }
  AddAdminRoutes(server, impl.controller,
                 {options.ca_sha256, options.user_token_max_ttl_s,
                  [&impl] { impl.events.RecheckCredentials(); }});
  AddAdviceRoutes(server, impl.controller);
  AddScaleRoutes(server, impl.controller, impl.autoscaler);
  server.Get("/healthz", [options](const httplib::Request&, httplib::Response& res) {
    const bool leading = !options.leading || options.leading();
    res.set_content(HealthJson(leading, options.leader ? options.leader() : store::LeaderInfo{}),
                    "application/json");
  });
  server.Get("/metrics", [&impl, need_token = options.metrics_need_token](
                             const httplib::Request& req, httplib::Response& res) {
    // Without a token, the controller's own figures only: the per-job series name each running
    // job's id and user, which no other user may learn. With one (asked for by --metrics-auth),
    // an admin's shows every job's series, another user's their own jobs' only.
    std::optional<store::UserRecord> caller;
    if (need_token || req.has_header("Authorization")) {
      caller = impl.Authenticate(req, res);
      if (!caller) return;
    }
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
    metric("gpufleet_controller_credential_reads_total", "counter",
           "Reads of the store to check a token (one token's, or every token's hash).",
           impl.controller.store().CredentialReads());
    metric("gpufleet_controller_log_chunks_held_back_total", "counter",
           "Job log chunks not taken because their user's running jobs were at --log-quota.",
           s.log_chunks_held_back);
    out +=
        "# HELP gpufleet_controller_gpus_drained GPUs nothing new is placed on, by cause "
        "(health: their agent says unhealthy; admin: `gpufleet drain`).\n"
        "# TYPE gpufleet_controller_gpus_drained gauge\n"
        "gpufleet_controller_gpus_drained{cause=\"health\"} " +
        std::to_string(s.gpus_drained_health) +
        "\n"
        "gpufleet_controller_gpus_drained{cause=\"admin\"} " +
        std::to_string(s.gpus_drained_admin) + "\n";
    metric("gpufleet_controller_jobs_stopped_unhealthy_gpu_total", "counter",
           "Jobs stopped because a GPU of theirs became unhealthy (requeued if restartable).",
           s.health_stops);
    metric("gpufleet_controller_idle_warnings_total", "counter",
           "Jobs warned that their GPUs have been idle for most of the idle timeout.",
           s.idle_warnings);
    metric("gpufleet_controller_idle_reclaims_total", "counter",
           "Jobs stopped because their GPUs stayed idle past the idle timeout.", s.idle_reclaims);
    metric("gpufleet_controller_unarrived_remembered", "gauge",
           "Job ids remembered for submits and cancels whose queue entries may still arrive "
           "(each forgotten an hour after).",
           s.unarrived_remembered);
    auto real = [&](const char* name, const char* help, double value) {
      char text[64];
      std::snprintf(text, sizeof text, "%.6g", value);
      out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" +
             name + " " + text + "\n";
    };
    real("gpufleet_fleet_gpu_hours_allocated_total",
         "GPU-hours allocated to jobs that ended since the controller started.", s.gpu_h_allocated);
    real("gpufleet_fleet_gpu_hours_used_total",
         "Of those, GPU-hours of SM activity (allocated x mean SM utilization).", s.gpu_h_used);
    out += "# HELP gpufleet_job_gpu_efficiency_pct A running job's mean SM utilization so far.\n"
           "# TYPE gpufleet_job_gpu_efficiency_pct gauge\n";
    for (const ControllerStats::JobEfficiency& e : s.running_efficiency) {
      if (!caller || (!caller->admin && e.user != caller->name)) continue;
      char text[64];
      std::snprintf(text, sizeof text, "%.1f", e.sm_pct);
      out += "gpufleet_job_gpu_efficiency_pct{job=\"" + std::to_string(e.id) + "\",user=\"" +
             e.user + "\"} " + text + "\n";
    }
    metric("gpufleet_controller_http_requests_total", "counter", "HTTP requests received.",
           impl.requests.load());
    if (const Autoscaler* a = impl.autoscaler.load()) out += ScaleMetricsText(*a);
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

void ApiServer::SetAutoscaler(const Autoscaler* autoscaler) { impl_->autoscaler = autoscaler; }

}  // namespace gpufleet::controller

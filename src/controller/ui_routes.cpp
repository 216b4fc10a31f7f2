#include "controller/ui_routes.h"

#include <cmath>

#include "controller/api_common.h"
#include "controller/auth.h"
#include "controller/fleet_json.h"
#include "net/json_input.h"

namespace gpufleet::controller {
namespace {

using api::Dump;
using api::Fail;
using nlohmann::json;

// No inline script or style, nothing from elsewhere, no framing: what the dashboard's own files
// need and nothing more (uPlot sets element.style from script, which CSP allows).
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'";

// (X-Content-Type-Options: nosniff goes on every answer, from the API server's pre-routing.)
void SecurityHeaders(httplib::Response& res) {
  res.set_header("Content-Security-Policy", kContentSecurityPolicy);
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Cross-Origin-Opener-Policy", "same-origin");
}

std::string SessionCookie(const std::string& value, int64_t max_age_s, bool secure) {
  return std::string(SessionCookieName(secure)) + "=" + value +
         "; Path=/; HttpOnly; SameSite=Strict; Max-Age=" + std::to_string(max_age_s) +
         (secure ? "; Secure" : "");
}

// Session cookies a request carries that are looked at (a browser may send several of one name:
// ui_sessions.h, CookieValues).
constexpr std::size_t kMaxSessionCookies = 64;  // (a head is at most 16 KiB anyway)

std::vector<std::string> SessionIds(const httplib::Request& req, bool secure) {
  if (!req.has_header("Cookie")) return {};
  return CookieValues(req.get_header_value("Cookie"), SessionCookieName(secure),
                      kMaxSessionCookies);
}

// Of the request's session cookies, the live session whose CSRF token is `shown` (a cookie
// planted by another port's page comes first but opens nothing and hides nothing); `any_live`
// says whether any cookie named a live session at all.
struct ShownSession {
  std::string id;
  UiSessions::Session session;
};
std::optional<ShownSession> SessionShowing(UiSessions& sessions, const httplib::Request& req,
                                           bool secure, std::string_view shown, int64_t now_ms,
                                           bool* any_live = nullptr) {
  if (any_live) *any_live = false;
  for (std::string& id : SessionIds(req, secure)) {
    auto session = sessions.Find(id, now_ms);
    if (!session) continue;
    if (any_live) *any_live = true;
    if (ConstantTimeEquals(shown, session->csrf)) return ShownSession{std::move(id), *session};
  }
  return std::nullopt;
}

// The session's user, when its token is still a user's (a revoked or expired token ends its
// sessions).
std::optional<store::UserRecord> SessionUser(Controller& controller, const UiSessions::Session& s) {
  auto credential = controller.store().CredentialOf(Sha256Hex(s.token), NowMs());
  if (!credential) return std::nullopt;
  return credential.value().user;
}

}  // namespace

bool AdmitSession(UiSessions& sessions, bool secure_cookie, httplib::Request& req,
                  httplib::Response& res, int64_t now_ms) {
  // Which session a request came through is the server's word only (an event stream ends with it).
  req.headers.erase(std::string(kSessionKeyHeader));
  if (req.has_header("Authorization")) return true;  // a bearer token speaks for itself
  if (SessionIds(req, secure_cookie).empty()) {
    return true;  // no credential at all: the API answers 401 itself
  }
  // Every request, reads too, must show the session's CSRF token: the cookie alone is not enough.
  // Browsers send a host's cookies to all of its ports, so a page another local user serves on
  // localhost:6006 gets this one's cookie; it cannot read this origin's storage, where the page
  // keeps the token. EventSource sends no headers: the stream takes the token as `csrf` in its
  // query.
  std::string shown = req.get_header_value("X-CSRF-Token");
  if (shown.empty() && req.method == "GET" && req.path == "/v1/events") {
    shown = req.get_param_value("csrf");
  }
  bool any_live = false;
  auto found = SessionShowing(sessions, req, secure_cookie, shown, now_ms, &any_live);
  if (!found) {
    if (!any_live) {
      Fail(res, 401, "your dashboard session has ended: log in again");
    } else {
      Fail(res, 403, "X-CSRF-Token: missing or not this session's", "X-CSRF-Token");
    }
    return false;
  }
  req.set_header("Authorization", "Bearer " + found->session.token);
  req.set_header(std::string(kSessionKeyHeader), UiSessions::KeyOf(found->id));
  return true;
}

void AddUiRoutes(net::HttpServer& server, const UiRouteContext& context) {
  Controller& controller = context.controller;
  UiSessions& sessions = context.sessions;
  EventHub& events = context.events;
  const bool secure = context.secure_cookie;

  server.Post("/ui/login", [&controller, &sessions, &events, secure](const httplib::Request& req,
                                                                     httplib::Response& res) {
    SecurityHeaders(res);
    // Only JSON: a cross-site form cannot send it without a CORS preflight, which fails.
    if (req.get_header_value("Content-Type").rfind("application/json", 0) != 0) {
      return Fail(res, 415, "Content-Type: log in with a JSON body {\"token\": \"...\"}",
                  "Content-Type");
    }
    auto parsed = ParseLoginRequest(req.body);
    if (!parsed) return Fail(res, parsed.failure());
    std::string token = std::move(parsed).value();
    auto credential = controller.store().CredentialOf(Sha256Hex(token), NowMs());
    if (!credential) return api::Unavailable(res, credential.error());
    const std::optional<store::UserRecord>& user = credential.value().user;
    if (!user) {
      return Fail(res, 401,
                  "token: not a user's token, or it expired (node and join tokens cannot log in)",
                  "token");
    }
    // A new login ends the session this browser held before (a shared browser's last user), when
    // the page shows that session's CSRF token: a cookie alone (another port's page) ends nothing.
    if (auto old =
            SessionShowing(sessions, req, secure, req.get_header_value("X-CSRF-Token"), NowMs())) {
      sessions.End(old->id);
      events.CloseSession(UiSessions::KeyOf(old->id));
    }
    auto opened = sessions.Open(std::move(token), NowMs());
    if (!opened) return Fail(res, opened.failure());
    res.set_header("Set-Cookie",
                   SessionCookie(opened.value().id, UiSessions::kLifetimeMs / 1000, secure));
    res.set_header("Cache-Control", "no-store");
    res.set_content(
        Dump({{"user", user->name}, {"admin", user->admin}, {"csrf", opened.value().csrf}}),
        "application/json");
  });
  server.Get("/ui/session",
             [&controller, &sessions, secure](const httplib::Request& req, httplib::Response& res) {
               SecurityHeaders(res);
               res.set_header("Cache-Control", "no-store");
               // Not logged in is an answer, not an error: a page asks this before it shows
               // anything. A session is named only to a request showing its CSRF token (as
               // every /v1 request must), which only the login's answer gave: never to the
               // cookie alone (AdmitSession says why).
               json out = {{"user", nullptr}, {"admin", false}};
               if (auto found = SessionShowing(sessions, req, secure,
                                               req.get_header_value("X-CSRF-Token"), NowMs())) {
                 if (auto user = SessionUser(controller, found->session)) {
                   out = {{"user", user->name}, {"admin", user->admin}};
                 } else {
                   sessions.End(found->id);
                 }
               }
               res.set_content(Dump(out), "application/json");
             });
  server.Post("/ui/logout", [&sessions, &events, secure](const httplib::Request& req,
                                                         httplib::Response& res) {
    SecurityHeaders(res);
    bool any_live = false;
    auto found = SessionShowing(sessions, req, secure, req.get_header_value("X-CSRF-Token"),
                                NowMs(), &any_live);
    if (!found && any_live) {
      return Fail(res, 403, "X-CSRF-Token: missing or not this session's", "X-CSRF-Token");
    }
    if (found) {
      sessions.End(found->id);
      events.CloseSession(UiSessions::KeyOf(found->id));
    }
    res.set_header("Set-Cookie", SessionCookie("", 0, secure));
    res.set_content(Dump({{"user", nullptr}}), "application/json");
  });
  server.Get("/ui", [](const httplib::Request&, httplib::Response& res) {
    res.status = 308;
    res.set_header("Location", "/ui/");
  });
  server.Get(R"(/ui/(.*))", [assets = context.assets](const httplib::Request& req,
                                                       httplib::Response& res) {
    SecurityHeaders(res);
    auto asset = assets->Find(req.matches[1].str());
    if (!asset) return Fail(res, 404, "no such dashboard file: " + req.path);
    res.set_header("ETag", asset->etag);
    // Revalidated each time (an upgraded controller serves new files at once); a match costs
    // a 304 without the body.
    res.set_header("Cache-Control", "no-cache");
    if (req.get_header_value("If-None-Match") == asset->etag) {
      res.status = 304;
      return;
    }
    res.set_content(asset->body, asset->content_type);
  });

  server.Get("/v1/fleet", [&controller](const httplib::Request& req, httplib::Response& res) {
    auto user = api::AuthenticateUser(controller.store(), req, res, NowMs());
    if (!user) return;
    res.set_content(Dump(FleetJson(controller.Nodes(), controller.Stats(), *user, NowMs())),
                    "application/json");
  });
  server.Get("/v1/queues", [&controller](const httplib::Request& req, httplib::Response& res) {
    auto user = api::AuthenticateUser(controller.store(), req, res, NowMs());
    if (!user) return;
    int gpus = 0;
    for (const NodeView& n : controller.Nodes()) {
      if (n.state == "READY") gpus += n.gpus;
    }
    const std::vector<Controller::QueueNow> queues = controller.Queues();
    double weights = 0;
    for (const Controller::QueueNow& q : queues) weights += q.weight;
    json out = json::array();
    for (const Controller::QueueNow& q : queues) {
      const double share = weights > 0 ? q.weight / weights : 0;
      out.push_back({{"name", q.name},
                     {"weight", q.weight},
                     {"share_pct", std::round(share * 1000) / 10},
                     {"quota_gpus", std::round(share * gpus * 10) / 10},
                     {"gpus_allocated", std::round(q.gpus_allocated * 10) / 10},
                     {"gpus_waiting", std::round(q.gpus_waiting * 10) / 10},
                     {"running", q.running},
                     {"waiting", q.waiting}});
    }
    res.set_content(Dump({{"policy", controller.options().queue_policy},
                          {"gpus", gpus},
                          {"queues", std::move(out)}}),
                    "application/json");
  });
  server.Get(R"(/v1/jobs/([^/]+)/gpus)",
             [&controller](const httplib::Request& req, httplib::Response& res) {
               auto user = api::AuthenticateUser(controller.store(), req, res, NowMs());
               if (!user) return;
               auto job = api::VisibleJob(controller.store(), req.matches[1], *user, res);
               if (!job) return;
               json series = json::array();
               for (const Controller::GpuSeries& g : controller.JobGpuSeries(*job)) {
                 json util = json::array(), mem = json::array();
                 for (std::size_t k = 0; k < g.series.t_ms.size(); ++k) {
                   const double u = g.series.util_pct[k], m = g.series.mem_used_mib[k];
                   util.push_back(u < 0 ? json(nullptr) : json(std::round(u * 10) / 10));
                   mem.push_back(m < 0 ? json(nullptr) : json(std::llround(m)));
                 }
                 series.push_back({{"node", g.node},
                                   {"index", g.index},
                                   {"t_ms", g.series.t_ms},
                                   {"util_pct", std::move(util)},
                                   {"mem_used_mib", std::move(mem)}});
               }
               res.set_content(Dump({{"id", job->id},
                                     {"state", std::string(store::StateName(job->state))},
                                     {"series", std::move(series)}}),
                               "application/json");
             });
  server.GetStream(
      "/v1/events",
      [&controller, &events](const httplib::Request& req,
                             httplib::Response& res) -> std::shared_ptr<net::EventStream> {
        const int64_t now_ms = NowMs();
        auto user = api::AuthenticateUser(controller.store(), req, res, now_ms);
        if (!user) return nullptr;
        const std::string sha256 = api::CredentialSha256(req);
        auto credential = controller.store().CredentialOf(sha256, now_ms);  // remembered: no read
        auto stream =
            events.Subscribe(*user, sha256, req.get_header_value(std::string(kSessionKeyHeader)),
                             credential ? credential.value().expires_ms : 0);
        if (!stream) {
          Fail(res, 503, "too many open event streams; try again later");
          return nullptr;
        }
        res.set_header("Content-Type", "text/event-stream; charset=utf-8");
        return stream;
      });
}

}  // namespace gpufleet::controller

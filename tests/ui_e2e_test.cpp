// The web dashboard's server side end to end, through a real `gpufleet up` (docs/dashboard.md):
// the session cookie and its CSRF token, the files under /ui/ with their security headers, what
// the fleet view and the live event stream show a non-admin, and the jobs list's paging. The
// pages themselves are tested in Chromium (tests/ui/ui_test.mjs).
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "e2e_up_server.h"

namespace gpufleet::e2e {
namespace {

using json = nlohmann::json;

struct Login {
  std::string cookie;  // "gf_session=..."
  std::string csrf;
};

class UiServer : public UpServer {
 protected:
  Login LogIn(const std::string& token) {
    auto r = Http("").Post("/ui/login", json{{"token", token}}.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
    if (!r || r->status != 200) return {};
    const std::string set_cookie = r->get_header_value("Set-Cookie");
    EXPECT_NE(set_cookie.find("HttpOnly"), std::string::npos) << set_cookie;
    EXPECT_NE(set_cookie.find("SameSite=Strict"), std::string::npos) << set_cookie;
    return {set_cookie.substr(0, set_cookie.find(';')), json::parse(r->body)["csrf"]};
  }
  httplib::Headers With(const Login& login, bool csrf) {
    httplib::Headers h{{"Cookie", login.cookie}};
    if (csrf) h.emplace("X-CSRF-Token", login.csrf);
    return h;
  }
  // Reads the event stream with `headers` for about `seconds` while `meanwhile` runs; returns
  // what came.
  std::string ReadEvents(const httplib::Headers& headers, double seconds,
                         const std::function<void()>& meanwhile) {
    std::string got;
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    std::thread reader([&] {
      httplib::Client c(url_);
      c.set_read_timeout(static_cast<time_t>(seconds), 0);
      // Node events come every second, so the stream never goes quiet: stop at the deadline.
      c.Get("/v1/events", headers, [&](const char* data, size_t n) {
        got.append(data, n);
        return std::chrono::steady_clock::now() < until;
      });
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    meanwhile();
    reader.join();
    return got;
  }
};

TEST_F(UiServer, ACookieSessionActsAsItsTokenAndStateChangesNeedItsCsrfToken) {
  const Login admin = LogIn(token_);
  ASSERT_FALSE(admin.cookie.empty());
  auto c = Http("");
  auto session = c.Get("/ui/session", With(admin, true));
  ASSERT_TRUE(session && session->status == 200);
  EXPECT_FALSE(json::parse(session->body)["user"].is_null()) << session->body;
  EXPECT_FALSE(json::parse(session->body).contains("csrf")) << "only the login's answer has it";
  EXPECT_TRUE(json::parse(c.Get("/ui/session")->body)["user"].is_null());  // not logged in
  // Found by a review: browsers send a host's cookies to all its ports, so a page another local
  // user serves on localhost:6006 got this cookie, read /ui/session for the CSRF token and acted
  // as the admin. Now the cookie alone reads nothing, not even who it is.
  EXPECT_EQ(c.Get("/v1/jobs", With(admin, false))->status, 403);
  EXPECT_TRUE(json::parse(c.Get("/ui/session", With(admin, false))->body)["user"].is_null());
  EXPECT_EQ(c.Get("/v1/jobs", With(admin, true))->status, 200);
  // The event stream (EventSource sends no headers) takes the token in its query instead.
  for (const auto& [query, status] : std::vector<std::pair<std::string, int>>{
           {"?csrf=" + admin.csrf, 200}, {"?csrf=x", 403}, {"", 403}}) {
    int got = 0;
    c.Get(
        "/v1/events" + query, With(admin, false),
        [&](const httplib::Response& r) {
          got = r.status;
          return false;  // the head is enough
        },
        [](const char*, size_t) { return false; });
    EXPECT_EQ(got, status) << query;
  }
  const std::string job = R"({"argv":["sleep","1"],"gpus":1})";
  // A submit with the cookie alone is what a cross-site form would send: refused.
  auto forged = c.Post("/v1/jobs", With(admin, false), job, "application/json");
  ASSERT_TRUE(forged);
  EXPECT_EQ(forged->status, 403);
  EXPECT_NE(forged->body.find("X-CSRF-Token"), std::string::npos);
  httplib::Headers wrong = With(admin, false);
  wrong.emplace("X-CSRF-Token", std::string(admin.csrf.size(), '0'));
  EXPECT_EQ(c.Post("/v1/jobs", wrong, job, "application/json")->status, 403);
  EXPECT_EQ(c.Post("/v1/jobs", With(admin, true), job, "application/json")->status, 201);
  // Login wants JSON (a form post cannot log a victim in) and a user's token.
  EXPECT_EQ(c.Post("/ui/login", "token=" + token_, "application/x-www-form-urlencoded")->status,
            415);
  EXPECT_EQ(c.Post("/ui/login", R"({"token":"not-a-token"})", "application/json")->status, 401);
  EXPECT_EQ(c.Post("/ui/login", R"({"token":7})", "application/json")->status, 400);
  // Logout needs the CSRF token too, then the cookie reads nothing.
  EXPECT_EQ(c.Post("/ui/logout", With(admin, false), "", "application/json")->status, 403);
  EXPECT_EQ(c.Post("/ui/logout", With(admin, true), "", "application/json")->status, 200);
  EXPECT_EQ(c.Get("/v1/jobs", With(admin, false))->status, 401);
  EXPECT_EQ(c.Get("/v1/jobs", httplib::Headers{{"Cookie", "gf_session=guess"}})->status, 401);
}

// Found by a review: cookies are not kept apart by port, and a cookie set for a narrower path is
// sent first, so a page another local user serves on localhost:6006 could plant
// "gf_session=junk; Path=/v1" and lock this user out of their dashboard (only the first cookie of
// the name was looked at: "session ended" on every request, a new login no help). Every cookie
// of the name is tried now; the planted one opens nothing.
TEST_F(UiServer, ASessionCookiePlantedInFrontOfTheRealOneLocksNoOneOut) {
  const Login admin = LogIn(token_);
  ASSERT_FALSE(admin.cookie.empty());
  const std::string id = admin.cookie.substr(admin.cookie.find('=') + 1);
  auto c = Http("");
  const httplib::Headers both{{"Cookie", "gf_session=planted; other=1; gf_session=" + id},
                              {"X-CSRF-Token", admin.csrf}};
  EXPECT_EQ(c.Get("/v1/jobs", both)->status, 200);
  EXPECT_FALSE(json::parse(c.Get("/ui/session", both)->body)["user"].is_null());
  // Without the CSRF token a live session behind the planted cookie is still a 403, not a 401.
  const httplib::Headers no_csrf{{"Cookie", "gf_session=planted; gf_session=" + id}};
  EXPECT_EQ(c.Get("/v1/jobs", no_csrf)->status, 403);
  EXPECT_EQ(c.Post("/ui/logout", no_csrf, "", "application/json")->status, 403);
  // Logging out ends the session the page showed, whatever came before it.
  EXPECT_EQ(c.Post("/ui/logout", both, "", "application/json")->status, 200);
  EXPECT_EQ(c.Get("/v1/jobs", both)->status, 401);
}

// Behind an https proxy (--behind-https-proxy) the cookie is made for https: Secure, and named
// __Host- so that a browser takes it only from this host, for every path. The plain name is not a
// session there: a cookie a sibling host planted under it opens nothing.
class UiBehindProxy : public UiServer {
 protected:
  void SetUp() override {
    extra_up_args = {"--behind-https-proxy"};
    UiServer::SetUp();
    extra_up_args.clear();
  }
};

TEST_F(UiBehindProxy, TheSessionCookieIsSecureAndHostOnly) {
  auto r = Http("").Post("/ui/login", json{{"token", token_}}.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  const std::string set_cookie = r->get_header_value("Set-Cookie");
  EXPECT_EQ(set_cookie.rfind("__Host-gf_session=", 0), 0U) << set_cookie;
  EXPECT_NE(set_cookie.find("; Secure"), std::string::npos) << set_cookie;
  EXPECT_NE(set_cookie.find("; Path=/;"), std::string::npos) << set_cookie;
  EXPECT_EQ(set_cookie.find("Domain"), std::string::npos) << set_cookie;
  const std::string id = set_cookie.substr(18, set_cookie.find(';') - 18);
  auto c = Http("");
  const std::string csrf = json::parse(r->body)["csrf"].get<std::string>();
  EXPECT_EQ(c.Get("/v1/jobs",
                  httplib::Headers{{"Cookie", "__Host-gf_session=" + id}, {"X-CSRF-Token", csrf}})
                ->status,
            200);
  EXPECT_EQ(
      c.Get("/v1/jobs", httplib::Headers{{"Cookie", "gf_session=" + id}, {"X-CSRF-Token", csrf}})
          ->status,
      401);
  auto session = c.Get("/ui/session",
                       httplib::Headers{{"Cookie", "gf_session=" + id}, {"X-CSRF-Token", csrf}});
  ASSERT_TRUE(session && session->status == 200);
  EXPECT_TRUE(json::parse(session->body)["user"].is_null()) << session->body;
  // Logging out clears the same cookie.
  httplib::Headers with{{"Cookie", "__Host-gf_session=" + id}, {"X-CSRF-Token", csrf}};
  auto out = c.Post("/ui/logout", with, "", "application/json");
  ASSERT_TRUE(out && out->status == 200);
  const std::string cleared = out->get_header_value("Set-Cookie");
  EXPECT_EQ(cleared.rfind("__Host-gf_session=;", 0), 0U) << cleared;
  EXPECT_NE(cleared.find("Max-Age=0"), std::string::npos) << cleared;
  EXPECT_NE(cleared.find("; Secure"), std::string::npos) << cleared;
}

TEST_F(UiServer, RevokingAUsersTokenEndsTheirSessions) {
  const json added = json::parse(Cli("users add carol --json"));
  const Login carol = LogIn(added["token"].get<std::string>());
  auto c = Http("");
  EXPECT_EQ(c.Get("/v1/jobs", With(carol, true))->status, 200);
  Cli("users remove carol");
  EXPECT_EQ(c.Get("/v1/jobs", With(carol, true))->status, 401);
  EXPECT_TRUE(json::parse(c.Get("/ui/session", With(carol, true))->body)["user"].is_null());
}

// Before, an open event stream kept its viewer's identity for good: a removed user (or a revoked
// admin) went on receiving events. Now the stream is closed at the next ping (every 15 s).
TEST_F(UiServer, RemovingAUserClosesTheirOpenEventStreamWithinAPing) {
  const json added = json::parse(Cli("users add erin --json"));
  const std::string erin = added["token"].get<std::string>();
  std::atomic<bool> ended{false};
  std::thread reader([&] {
    httplib::Client c(url_);
    c.set_read_timeout(60, 0);
    c.Get("/v1/events", httplib::Headers{{"Authorization", "Bearer " + erin}},
          [&](const char*, size_t) { return true; });
    ended = true;
  });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_FALSE(ended.load()) << "the stream ended before the user was removed";
  Cli("users remove erin");
  const auto removed = std::chrono::steady_clock::now();
  while (!ended && std::chrono::steady_clock::now() - removed < std::chrono::seconds(40)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(ended.load()) << "the removed user's stream was still open after 40 s";
  reader.join();
}

// Found by a review: a logout ended the session but not the event streams it had opened, which
// went on for good (every job change, to an admin's stream). Now the logout closes them at once,
// and an expired or ended session's stream is closed at the next ping as a revoked token's is.
// A login also ends the session the same browser held before (a shared browser's last user).
TEST_F(UiServer, LoggingOutClosesTheSessionsEventStreamsAtOnce) {
  const Login login = LogIn(token_);
  std::atomic<bool> ended{false};
  std::thread reader([&] {
    httplib::Client c(url_);
    c.set_read_timeout(60, 0);
    c.Get("/v1/events", With(login, true), [&](const char*, size_t) { return true; });
    ended = true;
  });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_FALSE(ended.load()) << "the stream ended before the logout";
  auto c = Http("");
  ASSERT_EQ(c.Post("/ui/logout", With(login, true), "", "application/json")->status, 200);
  const auto out = std::chrono::steady_clock::now();
  while (!ended && std::chrono::steady_clock::now() - out < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(ended.load()) << "the stream was still open 10 s after the logout";
  reader.join();

  const Login first = LogIn(token_);
  // Another port's page holds the cookie but not the token: its login ends nothing.
  auto planted = Http("").Post("/ui/login", httplib::Headers{{"Cookie", first.cookie}},
                               json{{"token", token_}}.dump(), "application/json");
  ASSERT_TRUE(planted && planted->status == 200);
  EXPECT_EQ(c.Get("/v1/jobs", With(first, true))->status, 200);
  auto again = Http("").Post("/ui/login", With(first, true), json{{"token", token_}}.dump(),
                             "application/json");
  ASSERT_TRUE(again && again->status == 200);
  EXPECT_EQ(c.Get("/v1/jobs", With(first, true))->status, 401)
      << "the browser's earlier session outlived its next login";
}

TEST_F(UiServer, FilesComeWithAStrictPolicyAndNothingOutsideTheDashboardIsServed) {
  auto c = Http("");
  auto page = c.Get("/ui/");
  ASSERT_TRUE(page && page->status == 200);
  const std::string csp = page->get_header_value("Content-Security-Policy");
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
  EXPECT_EQ(page->get_header_value("X-Content-Type-Options"), "nosniff");
  // The API's answers (one caller's jobs and logs) are never kept by a cache.
  auto jobs = c.Get("/v1/jobs");
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->get_header_value("Cache-Control"), "no-store");
  EXPECT_EQ(page->body.find("<script>"), std::string::npos) << "inline script in index.html";
  EXPECT_EQ(page->body.find("style=\""), std::string::npos) << "inline style in index.html";
  auto again = c.Get("/ui/", httplib::Headers{{"If-None-Match", page->get_header_value("ETag")}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  auto uplot = c.Get("/ui/vendor/uPlot.esm.js");
  ASSERT_TRUE(uplot && uplot->status == 200);
  EXPECT_EQ(uplot->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  for (const char* bad : {"/ui/../CMakeLists.txt", "/ui/%2e%2e/CMakeLists.txt", "/ui/node_modules/uplot/package.json",
                          "/ui//etc/passwd", "/ui/nothing.js"}) {
    auto r = c.Get(bad);
    ASSERT_TRUE(r) << bad;
    EXPECT_EQ(r->status, 404) << bad;
  }
  EXPECT_EQ(c.Post("/ui/", "x", "text/plain")->status, 405);
  auto bare = Http(token_).Get("/ui");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->status, 308);
  EXPECT_EQ(bare->get_header_value("Location"), "/ui/");
}

TEST_F(UiServer, ANonAdminSeesOnlyTheirOwnJobsInTheFleetAndTheEventStream) {
  const int64_t blocker = RunBlocker();  // the admin's job on all 4 GPUs
  ASSERT_GT(blocker, 0);
  const json added = json::parse(Cli("users add dave --json"));
  const std::string dave = added["token"].get<std::string>();
  const json fleet = json::parse(Http(dave).Get("/v1/fleet")->body);
  ASSERT_EQ(fleet["nodes"].size(), 1u) << fleet.dump();
  for (const json& g : fleet["nodes"][0]["gpus"]) {
    EXPECT_TRUE(g["busy"].get<bool>());
    EXPECT_TRUE(g["job"].is_null()) << g.dump();  // the admin's job is not named to dave
  }
  EXPECT_EQ(fleet["totals"]["gpus_allocated"], 4);
  const json admin_fleet = json::parse(Http(token_).Get("/v1/fleet")->body);
  EXPECT_EQ(admin_fleet["nodes"][0]["gpus"][0]["job"], blocker);

  int64_t daves_job = 0;
  const std::string seen = ReadEvents({{"Authorization", "Bearer " + dave}}, 3, [&] {
    auto r = Http(dave).Post("/v1/jobs", R"({"argv":["sleep","1"],"gpus":1,"name":"d"})",
                             "application/json");
    ASSERT_TRUE(r && r->status == 201);
    daves_job = json::parse(r->body)["id"].get<int64_t>();
    Http(token_).Post("/v1/jobs", R"({"argv":["sleep","1"],"gpus":1})", "application/json");
  });
  EXPECT_NE(seen.find("event: job\ndata: {\"id\":" + std::to_string(daves_job)),
            std::string::npos) << seen;
  EXPECT_NE(seen.find("event: node"), std::string::npos) << seen;
  EXPECT_EQ(seen.find("\"user\":\"root\""), std::string::npos) << seen;
  EXPECT_EQ(seen.find("\"job\":" + std::to_string(blocker)), std::string::npos) << seen;
  // No credential: no stream.
  EXPECT_EQ(Http("").Get("/v1/events")->status, 401);
  Http(token_).Post("/v1/jobs/" + std::to_string(blocker) + "/cancel", "", "application/json");
}

TEST_F(UiServer, TheJobsListSortsFiltersPagesAndCounts) {
  auto admin = Http(token_);
  for (int i = 0; i < 5; ++i) {
    const json job = {{"argv", {"true"}}, {"gpus", 1 + i % 3},
                      {"queue", i % 2 ? "team-a" : "team-b"}};
    ASSERT_EQ(admin.Post("/v1/jobs", job.dump(), "application/json")->status, 201);
  }
  auto r = admin.Get("/v1/jobs?user=*&sort=gpus&order=desc&limit=2&offset=1&total=1");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "");
  EXPECT_EQ(r->get_header_value("X-Total-Count"), "5");
  const json page = json::parse(r->body);
  ASSERT_EQ(page.size(), 2u);
  EXPECT_GE(page[0]["gpus"].get<int>(), page[1]["gpus"].get<int>());
  r = admin.Get("/v1/jobs?user=*&queue=team-a&total=1");
  EXPECT_EQ(r->get_header_value("X-Total-Count"), "2");
  for (const char* bad : {"sort=name", "order=up", "offset=-1", "offset=x"}) {
    auto e = admin.Get(std::string("/v1/jobs?") + bad);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->status, 400) << bad;
    EXPECT_TRUE(json::parse(e->body).contains("field")) << bad;
  }
}

}  // namespace
}  // namespace gpufleet::e2e

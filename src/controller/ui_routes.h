#pragma once
// The web dashboard's routes (docs/dashboard.md): its files under /ui/ with a strict
// Content-Security-Policy, cookie sessions (POST /ui/login, GET /ui/session, POST /ui/logout),
// and the API it needs beyond the CLI's: GET /v1/fleet, GET /v1/queues, GET /v1/jobs/<id>/gpus,
// and the live stream GET /v1/events. Internal to src/controller.
#include <memory>
#include <string_view>

#include "controller/controller.h"
#include "controller/event_hub.h"
#include "controller/ui_sessions.h"
#include "net/http_server.h"
#include "ui/assets.h"

namespace gpufleet::controller {

// The session cookie's name over plain HTTP, and over https (the dashboard served with TLS, by
// the controller or a proxy in front of it): there the cookie is also Secure, and the __Host-
// prefix makes browsers refuse one set by any other host (a sibling subdomain) or for a narrower
// path, so that no one can plant a session of their choosing in a user's browser.
inline constexpr const char* kSessionCookie = "gf_session";
inline constexpr const char* kSecureSessionCookie = "__Host-gf_session";
inline const char* SessionCookieName(bool secure) {
  return secure ? kSecureSessionCookie : kSessionCookie;
}

struct UiRouteContext {
  Controller& controller;
  UiSessions& sessions;
  EventHub& events;
  std::shared_ptr<const ui::AssetSet> assets;
  bool secure_cookie = false;  // reached over https: the cookie is Secure and __Host- prefixed
};

void AddUiRoutes(net::HttpServer& server, const UiRouteContext& context);

// For the API's auth hook: when a /v1 request has no Authorization header but a session cookie
// (SessionCookieName(secure_cookie)), puts the session's credential in its place (the routes then
// see a bearer token as from the CLI). Every request must carry the session's CSRF token in
// X-CSRF-Token (GET /v1/events: or in its `csrf` query parameter), reads too. Returns false after
// answering 401 (no such session) or 403 (a missing or wrong CSRF token). It also names the session
// in kSessionKeyHeader (UiSessions::KeyOf), removing any such header the client sent.
inline constexpr std::string_view kSessionKeyHeader = "X-Gpufleet-Session-Key";
bool AdmitSession(UiSessions& sessions, bool secure_cookie, httplib::Request& req,
                  httplib::Response& res, int64_t now_ms);

}  // namespace gpufleet::controller

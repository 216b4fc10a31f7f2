#pragma once
// Dashboard sessions: a browser logs in once with an API token and then holds only a random
// session id in an HttpOnly, SameSite=Strict cookie. Each session has its own CSRF token, which
// state-changing requests must echo in a header. Sessions live in the controller's memory: they
// end at logout, after `kLifetimeMs`, or at a restart (the user logs in again); the token stays
// in memory only, so revoking it ends its sessions at their next request.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpufleet::controller {

class UiSessions {
 public:
  static constexpr int64_t kLifetimeMs = 12LL * 3600 * 1000;
  // Sessions at most; a login beyond it is refused (kUnavailable) until one ends: it never ends
  // another holder's session.
  static constexpr std::size_t kMaxSessions = 10000;
  // Sessions of one token at most; a new one beyond it ends that token's own that expires first,
  // so that no user's logins can fill the table alone (users cannot make tokens; admins hand
  // them out).
  static constexpr std::size_t kMaxSessionsPerToken = 32;

  struct Session {
    std::string token;  // the API token it stands for
    std::string csrf;
    int64_t expires_ms = 0;
  };
  struct Opened {
    std::string id;  // for the cookie
    std::string csrf;
  };
  // A new session for the holder of `token` (already checked to be a user's), or an error when
  // the table is full of other holders' sessions or the system has no randomness.
  core::Result<Opened> Open(std::string token, int64_t now_ms);
  // The live session with this id (expired ones are forgotten).
  std::optional<Session> Find(std::string_view id, int64_t now_ms);
  void End(std::string_view id);
  // Whether the session whose id hashes to `key` (KeyOf) is live: what an open event stream
  // checks, holding only the key.
  bool Alive(const std::string& key, int64_t now_ms);
  // The key a session is held under (the SHA-256 of its id): names it without the id itself.
  static std::string KeyOf(std::string_view id);

 private:
  std::mutex mutex_;
  std::map<std::string, Session> sessions_;  // by SHA-256 of the id
};

// The token of a dashboard login body, `{"token": "..."}` (1-256 characters), or an error naming
// the field.
// The largest login body taken (its head is refused above it, before the body is read).
inline constexpr std::size_t kMaxLoginBody = 4096;
core::Result<std::string> ParseLoginRequest(std::string_view body);
// Every value of cookie `name` in a Cookie header ("a=1; gf_session=x"), in the header's order,
// at most `max_values`. A browser sends
// several when cookies of one name were set for several paths or by another port of the host (a
// more specific path first), so a page on another local port can plant one in front of the
// dashboard's own.
std::vector<std::string> CookieValues(std::string_view header, std::string_view name,
                                      std::size_t max_values);
// Compares in time that depends only on the lengths (for CSRF tokens).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace gpufleet::controller

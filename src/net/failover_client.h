#pragma once
// FailoverHttpClient: HttpClient's interface over a list of controllers that share one store, of
// which one leads and the others stand by. Requests follow the leader. The `gpufleet` client
// commands (--server URL1,URL2,...) and the agents (--controller URL1,URL2,...) use it; like
// HttpClient it needs the C library only.
//
// The rule, in one place:
// - A request goes to the endpoint that answered last (at first, the first URL).
// - It is sent again to the next endpoint when the server cannot have acted on it: connecting
//   failed (refused, unreachable, a connect timeout, name resolution, the TLS handshake), the
//   connection failed before the whole request had left, or the answer was a standby's (HTTP 503
//   with `X-Gpufleet-Role: standby`: standbys carry out nothing but GET /healthz).
// - A standby's `X-Gpufleet-Leader` is tried next when it is one of the configured URLs; a URL
//   that is not configured is never contacted (an answer cannot redirect the token elsewhere).
// - When the request was sent and the answer did not come (a timeout, a connection cut
//   mid-answer) the outcome is unknown: it is sent again only when the caller marked it
//   repeatable (GET is; so is a POST the server recognizes as a repeat, e.g. by a client token).
// - After a round in which every endpoint failed it waits (250 ms, doubling up to 1 s) and tries
//   another round, until the deadline (15 s); then the error names each endpoint and what it
//   said. The first round always tries every endpoint, however long their timeouts take.
// - A single URL behaves exactly as HttpClient: one attempt, the same answers and errors.
// - Whatever the number of URLs, an answer 429 (too many requests: refused before it was carried
//   out) with a Retry-After of 1 to 60 seconds is waited out and the request sent again, for at
//   most `rate_limited_wait_ms` in all; then the 429 is the answer.
//
// Every endpoint gets the same token, timeouts and TLS trust. Contract: one request at a time.
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "net/http_client.h"

namespace gpufleet::net {

// How long a request may look for the leader (see above); tests make it short.
struct FailoverPolicy {
  int deadline_ms = 15000;     // no new round starts after this (the first always completes)
  int first_backoff_ms = 250;  // the wait after a round in which every endpoint failed,
  int max_backoff_ms = 1000;   // doubling up to this
  int rate_limited_wait_ms = 300000;  // waits for 429 answers, in all
  // Told each wait for a 429 before it starts (seconds), e.g. to say so on a terminal.
  std::function<void(int64_t seconds)> on_rate_limited = nullptr;
};

// Whether a request whose outcome is unknown (sent, unanswered) may be sent again.
enum class Repeatable { kNo, kYes };

class FailoverHttpClient {
 public:
  // `urls`: one http[s]://HOST[:PORT] URL or several, comma-separated (spaces around each are
  // ignored). Each is checked as HttpClient::ForUrl checks it, the error naming the bad one; all
  // must use the same scheme (they share one trust); a URL given twice counts once.
  static core::Result<FailoverHttpClient> ForUrls(const std::string& urls);

  // The configured URLs, in order.
  std::size_t size() const { return endpoints_.size(); }
  const std::string& url(std::size_t i) const { return endpoints_[i].url; }
  // The endpoint the next request goes to first (the one that answered last).
  const std::string& current_url() const { return endpoints_[current_].url; }
  // Whether the URLs are https.
  bool tls() const { return endpoints_.front().client.tls(); }
  // After a request over https: the PEM of the CA the answering server was verified against.
  const std::string& VerifiedCaPem() const { return endpoints_[current_].client.VerifiedCaPem(); }

  // The configured endpoint `url` names (scheme, host and port compared), or size(): how a
  // standby's X-Gpufleet-Leader is matched (public for the fuzz target).
  std::size_t Find(const std::string& url) const;

  void SetTrust(const TlsTrust& trust);
  void SetBearerToken(const std::string& token);
  void SetTimeouts(int connect_ms, int read_ms);
  void SetPolicy(const FailoverPolicy& policy) { policy_ = policy; }

  core::Result<HttpReply> Get(const std::string& path) {
    return Send("GET", path, "", "", Repeatable::kYes);
  }
  core::Result<HttpReply> Post(const std::string& path, const std::string& body = "",
                               const std::string& content_type = "application/json",
                               Repeatable repeatable = Repeatable::kNo) {
    return Send("POST", path, body, content_type, repeatable);
  }
  // Any method; GET and HEAD are always repeatable.
  core::Result<HttpReply> Send(const std::string& method, const std::string& path,
                               const std::string& body, const std::string& content_type,
                               Repeatable repeatable = Repeatable::kNo);

 private:
  core::Result<HttpReply> SendToLeader(const std::string& method, const std::string& path,
                                       const std::string& body, const std::string& content_type,
                                       Repeatable repeatable);
  struct Endpoint {
    std::string url;
    HttpClient client;
  };
  explicit FailoverHttpClient(std::vector<Endpoint> endpoints) : endpoints_(std::move(endpoints)) {}

  std::vector<Endpoint> endpoints_;
  std::size_t current_ = 0;
  FailoverPolicy policy_;
};

// Whether `reply` is a standby controller's refusal (the request was not carried out there).
bool IsStandbyReply(const HttpReply& reply);

}  // namespace gpufleet::net

#include "net/failover_client.h"

#include <strings.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>
#include <utility>

namespace gpufleet::net {
namespace {

std::string Trim(const std::string& s) {
  const std::size_t first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// A server's words, safe to put in an error a terminal shows: bytes outside printable ASCII
// become \xNN, and at most 200 of them are kept.
std::string Quoted(const std::string& text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < 200; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c >= 0x7F) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > 200) out += "...";
  return out;
}

bool SameEndpoint(const HttpClient& a, const HttpClient& b) {
  return a.tls() == b.tls() && strcasecmp(a.host().c_str(), b.host().c_str()) == 0 &&
         a.port() == b.port();
}

}  // namespace

bool IsStandbyReply(const HttpReply& reply) {
  return reply.status == 503 &&
         strcasecmp(Trim(reply.Header("X-Gpufleet-Role")).c_str(), "standby") == 0;
}

core::Result<FailoverHttpClient> FailoverHttpClient::ForUrls(const std::string& urls) {
  std::vector<Endpoint> endpoints;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = urls.find(',', start);
    const std::string url =
        Trim(urls.substr(start, comma == std::string::npos ? comma : comma - start));
    if (url.empty()) {
      return core::Error{"'" + urls + "': an empty URL in the comma-separated list"};
    }
    auto client = HttpClient::ForUrl(url);
    if (!client) return core::Error{client.error()};
    if (!endpoints.empty() && client.value().tls() != endpoints.front().client.tls()) {
      return core::Error{"'" + url + "': the URLs of one list must all be http:// or all https://"};
    }
    const bool seen = std::any_of(endpoints.begin(), endpoints.end(), [&](const Endpoint& e) {
      return SameEndpoint(e.client, client.value());
    });
    if (!seen) endpoints.push_back(Endpoint{url, std::move(client).value()});
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return FailoverHttpClient(std::move(endpoints));
}

void FailoverHttpClient::SetTrust(const TlsTrust& trust) {
  for (Endpoint& e : endpoints_) e.client.SetTrust(trust);
}

void FailoverHttpClient::SetBearerToken(const std::string& token) {
  for (Endpoint& e : endpoints_) e.client.SetBearerToken(token);
}

void FailoverHttpClient::SetTimeouts(int connect_ms, int read_ms) {
  for (Endpoint& e : endpoints_) e.client.SetTimeouts(connect_ms, read_ms);
}

std::size_t FailoverHttpClient::Find(const std::string& url) const {
  auto parsed = HttpClient::ForUrl(Trim(url));
  if (!parsed) return endpoints_.size();
  for (std::size_t i = 0; i < endpoints_.size(); ++i) {
    if (SameEndpoint(endpoints_[i].client, parsed.value())) return i;
  }
  return endpoints_.size();
}

core::Result<HttpReply> FailoverHttpClient::Send(const std::string& method, const std::string& path,
                                                 const std::string& body,
                                                 const std::string& content_type,
                                                 Repeatable repeatable) {
  int64_t waited_ms = 0;
  for (;;) {
    auto reply = SendToLeader(method, path, body, content_type, repeatable);
    if (!reply || reply.value().status != 429) return reply;
    const std::string after = Trim(reply.value().Header("Retry-After"));
    int64_t seconds = 0;
    const auto [end, ec] = std::from_chars(after.data(), after.data() + after.size(), seconds);
    if (ec != std::errc() || end != after.data() + after.size() || seconds < 1 || seconds > 60 ||
        waited_ms + seconds * 1000 > policy_.rate_limited_wait_ms) {
      return reply;
    }
    if (policy_.on_rate_limited) policy_.on_rate_limited(seconds);
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    waited_ms += seconds * 1000;
  }
}

core::Result<HttpReply> FailoverHttpClient::SendToLeader(const std::string& method,
                                                         const std::string& path,
                                                         const std::string& body,
                                                         const std::string& content_type,
                                                         Repeatable repeatable) {
  if (endpoints_.size() == 1) return endpoints_[0].client.Send(method, path, body, content_type);
  using Clock = std::chrono::steady_clock;
  const bool repeat_ok = repeatable == Repeatable::kYes || method == "GET" || method == "HEAD";
  const std::size_t n = endpoints_.size();
  const Clock::time_point started = Clock::now();
  const Clock::time_point deadline = started + std::chrono::milliseconds(policy_.deadline_ms);
  int backoff_ms = policy_.first_backoff_ms;
  std::vector<std::string> said(n);   // what each endpoint said last
  std::optional<std::size_t> leader;  // the configured endpoint a standby named as the leader
  for (int round = 0;; ++round) {
    std::vector<bool> tried(n, false);
    std::size_t i = leader.value_or(current_);
    for (;;) {
      tried[i] = true;
      Endpoint& e = endpoints_[i];
      auto reply = e.client.Send(method, path, body, content_type);
      if (reply && !IsStandbyReply(reply.value())) {
        current_ = i;
        return reply;
      }
      if (reply) {  // a standby: it did nothing with the request
        const std::string named = Trim(reply.value().Header("X-Gpufleet-Leader"));
        const std::size_t at = named.empty() ? n : Find(named);
        if (at < n && at != i) leader = at;
        said[i] = "a standby; " + (named.empty() ? std::string("it knows no leader")
                                   : at < n      ? "it names " + endpoints_[at].url + " the leader"
                                                 : "its leader " + Quoted(named) +
                                                  " is not in the list, so it was not contacted");
      } else if (e.client.last_failure() == HttpClient::Failure::kUnknown && !repeat_ok) {
        return core::Error{e.url + ": " + reply.error() +
                           " (the request may have been carried out there, so it was not sent "
                           "again)"};
      } else {
        said[i] = reply.error();
      }
      // Next: the leader a standby named, else the following endpoint not tried in this round.
      std::size_t next = n;
      if (leader && !tried[*leader]) {
        next = *leader;
      } else {
        for (std::size_t k = 1; k < n && next == n; ++k) {
          if (!tried[(i + k) % n]) next = (i + k) % n;
        }
      }
      if (next == n || (round > 0 && Clock::now() >= deadline)) break;
      i = next;
    }
    if (Clock::now() + std::chrono::milliseconds(backoff_ms) >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min(backoff_ms * 2, std::max(policy_.max_backoff_ms, backoff_ms));
  }
  if (leader) current_ = *leader;
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "%.1f s",
                std::chrono::duration<double>(Clock::now() - started).count());
  std::string error = "no leading controller answered within " + std::string(elapsed);
  const char* separator = ": ";
  for (std::size_t k = 0; k < n; ++k) {
    if (said[k].empty()) continue;
    error += separator + endpoints_[k].url + " (" + said[k] + ")";
    separator = "; ";
  }
  return core::Error{error};
}

}  // namespace gpufleet::net

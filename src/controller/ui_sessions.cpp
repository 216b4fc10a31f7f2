#include "controller/ui_sessions.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "controller/auth.h"
#include "net/json_input.h"

namespace gpufleet::controller {

core::Result<UiSessions::Opened> UiSessions::Open(std::string token, int64_t now_ms) {
  auto id = NewToken();
  if (!id) return id.failure();
  auto csrf = NewToken();
  if (!csrf) return csrf.failure();
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(sessions_, [&](const auto& s) { return s.second.expires_ms <= now_ms; });
  auto expires_first = [&](const std::string* only_token) {
    auto first = sessions_.end();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (only_token != nullptr && it->second.token != *only_token) continue;
      if (first == sessions_.end() || it->second.expires_ms < first->second.expires_ms) first = it;
    }
    return first;
  };
  const std::size_t own = static_cast<std::size_t>(std::count_if(
      sessions_.begin(), sessions_.end(), [&](const auto& s) { return s.second.token == token; }));
  if (own >= kMaxSessionsPerToken) {
    sessions_.erase(expires_first(&token));
  } else if (sessions_.size() >= kMaxSessions) {
    // Never another holder's session: a login beyond the cap waits for one to end.
    return core::Error{"too many dashboard sessions are open; log in again later",
                       core::ErrorCode::kUnavailable};
  }
  sessions_[Sha256Hex(id.value())] = Session{std::move(token), csrf.value(), now_ms + kLifetimeMs};
  return Opened{id.value(), csrf.value()};
}

std::optional<UiSessions::Session> UiSessions::Find(std::string_view id, int64_t now_ms) {
  if (id.empty() || id.size() > 128) return std::nullopt;
  const std::string key = Sha256Hex(std::string(id));
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sessions_.find(key);
  if (it == sessions_.end()) return std::nullopt;
  if (it->second.expires_ms <= now_ms) {
    sessions_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

std::string UiSessions::KeyOf(std::string_view id) { return Sha256Hex(std::string(id)); }

bool UiSessions::Alive(const std::string& key, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sessions_.find(key);
  return it != sessions_.end() && it->second.expires_ms > now_ms;
}

void UiSessions::End(std::string_view id) {
  const std::string key = Sha256Hex(std::string(id));
  std::lock_guard<std::mutex> lock(mutex_);
  sessions_.erase(key);
}

core::Result<std::string> ParseLoginRequest(std::string_view body) {
  // Read before any login: bounded like every other body (ParseJsonInput refuses deep nesting
  // before parsing; a login body is tiny).
  if (body.size() > kMaxLoginBody) {
    return core::Error{"token: a login body is at most " + std::to_string(kMaxLoginBody) + " bytes",
                       core::ErrorCode::kInvalid, "token"};
  }
  auto parsed = net::ParseJsonInput(body);
  if (!parsed) return core::Error{"token: " + parsed.error(), core::ErrorCode::kInvalid, "token"};
  const nlohmann::json& doc = parsed.value();
  if (!doc.is_object() || !doc.contains("token") || !doc["token"].is_string()) {
    return core::Error{"token: a JSON string is required", core::ErrorCode::kInvalid, "token"};
  }
  std::string token = doc["token"].get<std::string>();
  if (token.empty() || token.size() > 256) {
    return core::Error{"token: 1 to 256 characters", core::ErrorCode::kInvalid, "token"};
  }
  return token;
}

std::vector<std::string> CookieValues(std::string_view header, std::string_view name,
                                      std::size_t max_values) {
  std::vector<std::string> values;
  std::size_t pos = 0;
  while (pos < header.size()) {
    std::size_t end = header.find(';', pos);
    if (end == std::string_view::npos) end = header.size();
    std::string_view pair = header.substr(pos, end - pos);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    const std::size_t eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) {
      if (values.size() == max_values) break;
      std::string_view value = pair.substr(eq + 1);
      while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
      values.emplace_back(value);
    }
    pos = end + 1;
  }
  return values;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    diff |= static_cast<unsigned char>(a[k] ^ b[k]);
  }
  return diff == 0;
}

}  // namespace gpufleet::controller

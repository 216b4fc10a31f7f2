#include "controller/api_common.h"

#include <charconv>
#include <cstdio>
#include <map>
#include <mutex>
#include <string_view>

#include "controller/auth.h"
#include "controller/controller.h"

namespace gpufleet::controller::api {

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void Fail(httplib::Response& res, int status, const std::string& message,
          const std::string& field) {
  res.status = status;
  json body = {{"error", message}};
  if (!field.empty()) body["field"] = field;
  res.set_content(Dump(body), "application/json");
}

int HttpStatus(core::ErrorCode code) {
  switch (code) {
    case core::ErrorCode::kInvalid:
    case core::ErrorCode::kInfeasible:
      return 400;
    case core::ErrorCode::kForbidden:
      return 403;
    case core::ErrorCode::kNotFound:
      return 404;
    case core::ErrorCode::kUnavailable:
      return 503;
    case core::ErrorCode::kInternal:
      return 500;
  }
  return 500;
}

namespace {

// Whether `detail` is what a store said: it begins with the store's name, which carries the data
// directory's path (SQLite) or the database's host, port and name (PostgreSQL).
bool FromStore(const std::string& detail) {
  return detail.rfind("store ", 0) == 0 || detail.rfind("PostgreSQL ", 0) == 0;
}

}  // namespace

void Fail(httplib::Response& res, const core::Error& error) {
  const int status = HttpStatus(error.code);
  if (status == 503 && FromStore(error.message)) return Unavailable(res, error.message);
  Fail(res, status, error.message, error.field);
}

void Unavailable(httplib::Response& res, const std::string& detail) {
  // The controller's own words ("this controller no longer leads") go through as they are.
  if (!FromStore(detail)) return Fail(res, 503, detail);
  {
    // Each distinct detail at most once a second, so that a flood of requests while the store is
    // down does not flood the log, and a second failure is not hidden behind the first.
    static std::mutex mutex;
    static std::map<std::string, int64_t> logged_s;  // detail -> the second it was last logged
    const int64_t now_s = NowMs() / 1000;
    std::lock_guard<std::mutex> lock(mutex);
    if (logged_s.size() >= 64) logged_s.clear();
    auto [it, fresh] = logged_s.try_emplace(detail, now_s);
    if (fresh || it->second != now_s) {
      it->second = now_s;
      std::fprintf(stderr, "gpufleet controller: answered 503: %s\n", detail.c_str());
    }
  }
  // What a caller can act on, named without the paths and addresses around it.
  std::string why;
  if (detail.find("the disk is full") != std::string::npos) {
    why = ": its disk is full";
  } else if (detail.find("not writable") != std::string::npos) {
    why = ": its data directory is not writable";
  } else if (detail.find("connection was lost") != std::string::npos) {
    why = ": it lost its database connection";
  }
  Fail(res, 503, "the controller cannot answer now" + why + " (its log says more); try again");
}

std::optional<int64_t> ParseId(const std::string& text) {
  int64_t id = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return id;
}

namespace {
constexpr std::string_view kBearer = "Bearer ";
}  // namespace

std::string CredentialSha256(const httplib::Request& req) {
  const std::string header = req.get_header_value("Authorization");
  if (header.rfind(kBearer, 0) != 0 || header.size() == kBearer.size()) return "";
  return Sha256Hex(header.substr(kBearer.size()));
}

std::optional<Caller> Authenticate(store::Store& store, const httplib::Request& req,
                                   httplib::Response& res, int64_t now_ms) {
  const std::string sha = CredentialSha256(req);
  if (sha.empty()) {
    Fail(res, 401,
         "missing bearer token: pass GPUFLEET_TOKEN or use the token file that "
         "`gpufleet up` wrote in its data directory");
    return std::nullopt;
  }
  auto credential = store.CredentialOf(sha, now_ms);  // from memory, mostly (store.h)
  if (!credential) {
    api::Unavailable(res, credential.error());
    return std::nullopt;
  }
  const std::optional<store::UserRecord>& user = credential.value().user;
  if (user) return Caller{store::TokenKind::kUser, user->name, user->admin, ""};
  const std::optional<store::TokenRecord>& token = credential.value().token;
  if (!token) {  // CredentialOf names nobody for an expired token
    Fail(res, 401, "unknown, revoked or expired token");
    return std::nullopt;
  }
  const store::TokenRecord& t = *token;
  if (t.kind == store::TokenKind::kNode) {
    return Caller{store::TokenKind::kNode, "node:" + t.node, false, t.node};
  }
  // A join token bound to a node name (token create --join --node) may claim that one only.
  return Caller{store::TokenKind::kJoin, "join:" + store::TokenId(t.sha256), false, t.node};
}

std::optional<bool> ParseFlag(const std::string& text) {
  if (text == "1" || text == "true") return true;
  if (text == "0" || text == "false") return false;
  return std::nullopt;
}

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 64 || name[0] == '-' || name[0] == '.') return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-' || c == '@';
    if (!ok) return false;
  }
  return true;
}

std::optional<store::UserRecord> AuthenticateUser(store::Store& store, const httplib::Request& req,
                                                  httplib::Response& res, int64_t now_ms) {
  auto caller = Authenticate(store, req, res, now_ms);
  if (!caller) return std::nullopt;
  if (caller->kind != store::TokenKind::kUser) {
    Fail(res, 403, "a node or join credential cannot use the user API");
    return std::nullopt;
  }
  return store::UserRecord{caller->name, caller->admin};
}

std::optional<store::JobRecord> VisibleJob(store::Store& store, const std::string& id_text,
                                           const store::UserRecord& user, httplib::Response& res) {
  auto id = ParseId(id_text);
  if (!id) {
    Fail(res, 400, "job id '" + id_text + "' is not a number", "id");
    return std::nullopt;
  }
  auto job = store.GetJob(*id);
  if (!job) {
    api::Unavailable(res, job.error());
    return std::nullopt;
  }
  if (!job.value() || (!user.admin && job.value()->user != user.name)) {
    Fail(res, 404, "no job " + id_text);  // another user's job does not exist for you
    return std::nullopt;
  }
  return *job.value();
}

std::optional<EventPage> ParseEventPage(const httplib::Request& req, httplib::Response& res,
                                        const std::string& limit_key, const std::string& before_key,
                                        const std::string& after_key, int64_t fallback,
                                        int64_t most) {
  EventPage page{fallback, 0, -1};
  if (req.has_param(limit_key)) {
    auto n = ParseId(req.get_param_value(limit_key));
    if (!n || *n < 1 || *n > most) {
      Fail(res, 400, limit_key + " must be an integer in 1.." + std::to_string(most), limit_key);
      return std::nullopt;
    }
    page.limit = *n;
  }
  if (req.has_param(before_key)) {
    auto id = ParseId(req.get_param_value(before_key));
    if (!id || *id < 1) {
      Fail(res, 400, before_key + " must be an event id", before_key);
      return std::nullopt;
    }
    page.before = *id;
  }
  if (req.has_param(after_key)) {
    auto id = ParseId(req.get_param_value(after_key));
    if (!id || *id < 0) {
      Fail(res, 400, after_key + " must be an event id (0: from the first)", after_key);
      return std::nullopt;
    }
    if (page.before > 0) {
      Fail(res, 400, after_key + " and " + before_key + " ask for opposite directions: one of them",
           after_key);
      return std::nullopt;
    }
    page.after = *id;
  }
  return page;
}

core::Result<std::vector<store::JobEvent>> ReadEventPage(store::Store& store, int64_t job_id,
                                                         const EventPage& page, bool& more) {
  // One more than asked: whether more remain that way.
  auto events = page.after >= 0 ? store.EventsAfter(job_id, page.after, page.limit + 1)
                                : store.EventsPage(job_id, page.before, page.limit + 1);
  if (!events) return events;
  more = static_cast<int64_t>(events.value().size()) > page.limit;
  if (more && page.after >= 0) events.value().pop_back();
  if (more && page.after < 0) events.value().erase(events.value().begin());
  return events;
}

std::vector<std::string> ImagesShownToUsers(const std::vector<std::string>& images,
                                            const core::ContainerPolicy& policy) {
  std::vector<std::string> shown;
  for (const std::string& image : images) {
    for (const std::string& prefix : policy.allowed_images) {
      if (core::ImageIsUnder(image, prefix)) {
        shown.push_back(image);
        break;
      }
    }
  }
  return shown;
}

void HideOthersProcesses(json& value, const std::set<std::string>& own_jobs) {
  if (value.is_array()) {
    for (json& v : value) HideOthersProcesses(v, own_jobs);
    return;
  }
  if (!value.is_object()) return;
  for (auto& [key, v] : value.items()) {
    if (key != "processes" || !v.is_array()) {
      HideOthersProcesses(v, own_jobs);
      continue;
    }
    for (json& p : v) {
      if (!p.is_object()) continue;
      const auto job = p.find("job");
      const bool own =
          job != p.end() && job->is_string() && own_jobs.count(job->get<std::string>());
      if (own) continue;
      for (const char* field : {"command", "user", "uid", "job"}) {
        if (p.contains(field)) p[field] = nullptr;
      }
    }
  }
}

}  // namespace gpufleet::controller::api

#include "controller/admin_routes.h"

#include <algorithm>

#include "controller/api_common.h"
#include "controller/auth.h"
#include "core/node.h"
#include "net/json_input.h"
#include "net/node_protocol.h"

namespace gpufleet::controller {
namespace {

using api::Caller;
using api::Dump;
using api::Fail;
using api::json;

constexpr int64_t kDefaultJoinTtlS = 3600;
constexpr int64_t kMaxJoinTtlS = 30 * 86400;
constexpr int64_t kMaxUserTokenTtlS = int64_t{10} * 366 * 86400;  // ten years: "no end" is 0
constexpr int64_t kMinUserTokenTtlS = 1;

// The calling admin, or nothing after answering 401/403.
std::optional<Caller> Admin(Controller& controller, const httplib::Request& req,
                            httplib::Response& res) {
  auto caller = api::Authenticate(controller.store(), req, res, NowMs());
  if (!caller) return std::nullopt;
  if (caller->kind != store::TokenKind::kUser || !caller->admin) {
    Fail(res, 403, "only admins manage users, tokens and nodes");
    return std::nullopt;
  }
  return caller;
}

std::optional<json> Body(const httplib::Request& req, httplib::Response& res) {
  auto parsed = net::ParseJsonInput(req.body.empty() ? std::string_view("{}") : req.body);
  if (!parsed || !parsed.value().is_object()) {
    Fail(res, 400, "the body is not a JSON object" + (parsed ? "" : ": " + parsed.error()), "body");
    return std::nullopt;
  }
  return std::move(parsed).value();
}

void Audit(Controller& controller, const Caller& who, const std::string& what,
           const std::string& detail) {
  if (auto r = controller.store().Audit(0, who.name, what, detail, NowMs()); !r) {
    std::fprintf(stderr, "gpufleet: audit log: %s\n", r.error().c_str());
  }
}

// No control characters (UTF-8 passes): what is stored is shown on terminals later.
bool Printable(const std::string& text) {
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

json TokenJson(const store::TokenRecord& t) {
  return {{"id", store::TokenId(t.sha256)},
          {"kind", std::string(store::TokenKindName(t.kind))},
          {"user", t.user},
          {"node", t.node},
          {"created_ms", t.created_ms},
          {"expires_ms", t.expires_ms},
          {"created_by", t.created_by}};
}

// When a new user token made at `now_ms` stops working: the body's `ttl_s` from now, within
// the controller's lifetime cap (`max_ttl_s`, 0: none), or the cap itself when `ttl_s` is
// absent (0: never). Nothing after answering 400.
std::optional<int64_t> UserTokenExpiry(const json& j, int64_t max_ttl_s, int64_t now_ms,
                                       httplib::Response& res) {
  if (!j.contains("ttl_s")) return max_ttl_s > 0 ? now_ms + max_ttl_s * 1000 : 0;
  const int64_t most = max_ttl_s > 0 ? max_ttl_s : kMaxUserTokenTtlS;
  if (!j["ttl_s"].is_number_integer() || j["ttl_s"].get<int64_t>() < kMinUserTokenTtlS ||
      j["ttl_s"].get<int64_t>() > most) {
    Fail(res, 400,
         "ttl_s: must be an integer in " + std::to_string(kMinUserTokenTtlS) + ".." +
             std::to_string(most) +
             (max_ttl_s > 0 ? " (this controller's --user-token-lifetime)" : "") +
             "; leave it out for " + (max_ttl_s > 0 ? "the longest allowed" : "no end"),
         "ttl_s");
    return std::nullopt;
  }
  return now_ms + j["ttl_s"].get<int64_t>() * 1000;
}

}  // namespace

// The audit log's pages (GET /v1/audit): the latest 1,000 events unless asked otherwise.
constexpr int64_t kDefaultAuditPage = 1000;
constexpr int64_t kMaxAuditPage = 10000;

void AddAdminRoutes(net::HttpServer& server, Controller& controller,
                    const AdminRouteOptions& options) {
  const std::string& ca_sha256 = options.ca_sha256;
  const int64_t max_ttl_s = options.user_token_max_ttl_s;
  server.Post("/v1/users", [&controller, max_ttl_s](const httplib::Request& req,
                                                    httplib::Response& res) {
    auto admin = Admin(controller, req, res);
    if (!admin) return;
    auto body = Body(req, res);
    if (!body) return;
    const json& j = *body;
    if (!j.contains("name") || !j["name"].is_string() ||
        !api::ValidName(j["name"].get<std::string>())) {
      return Fail(res, 400, "name: 1-64 of A-Z a-z 0-9 . _ @ -, not starting with - or .", "name");
    }
    if (j.contains("admin") && !j["admin"].is_boolean()) {
      return Fail(res, 400, "admin: must be true or false", "admin");
    }
    if (j["name"] == "all") {
      return Fail(res, 400,
                  "name: 'all' is reserved (GET /v1/jobs?user=all means every user's jobs)",
                  "name");
    }
    if (j.contains("reclaim") && !j["reclaim"].is_boolean()) {
      return Fail(res, 400, "reclaim: must be true or false", "reclaim");
    }
    const std::string name = j["name"].get<std::string>();
    const bool make_admin = j.value("admin", false);
    const int64_t now_ms = NowMs();
    const auto expires_ms = UserTokenExpiry(j, max_ttl_s, now_ms, res);
    if (!expires_ms) return;
    // Jobs are owned by user name, so a new account under a removed user's name would see,
    // cancel and read the logs of that user's jobs. It may, but only when the admin says this
    // is the same person (reclaim); otherwise the name is refused while it owns any job.
    const bool reclaim = j.value("reclaim", false);
    store::JobFilter owned;
    owned.user = name;
    auto old_jobs = controller.store().CountJobs(owned);
    if (!old_jobs) return api::Unavailable(res, old_jobs.error());
    if (old_jobs.value() > 0 && !reclaim) {
      auto existing = controller.store().Users();
      if (!existing) return api::Unavailable(res, existing.error());
      const bool exists = std::any_of(existing.value().begin(), existing.value().end(),
                                      [&](const store::UserInfo& u) { return u.name == name; });
      if (!exists) {
        return Fail(res, 409,
                    "name: " + name + " was removed but still owns " +
                        std::to_string(old_jobs.value()) +
                        " job(s); a new account of that name would see them. Choose another "
                        "name, or add it with reclaim (gpufleet users add " +
                        name + " --reclaim) if this is the same person",
                    "name");
      }
    }
    auto token = NewToken();
    if (!token) return api::Unavailable(res, token.error());
    store::TokenRecord record;
    record.sha256 = Sha256Hex(token.value());
    record.created_ms = now_ms;
    record.expires_ms = *expires_ms;
    record.created_by = admin->name;
    auto added = controller.store().AddUser(name, make_admin, record);
    if (!added) return Fail(res, added.failure());
    Audit(controller, *admin, "user added",
          name + (make_admin ? " (admin)" : "") +
              (reclaim && old_jobs.value() > 0
                   ? " (reclaiming " + std::to_string(old_jobs.value()) + " job(s))"
                   : ""));
    res.status = 201;
    res.set_content(Dump({{"user", name},
                          {"admin", make_admin},
                          {"token", token.value()},
                          {"id", store::TokenId(record.sha256)},
                          {"expires_ms", record.expires_ms}}),
                    "application/json");
  });
  server.Get("/v1/users", [&controller](const httplib::Request& req, httplib::Response& res) {
    if (!Admin(controller, req, res)) return;
    auto users = controller.store().Users();
    if (!users) return api::Unavailable(res, users.error());
    json out = json::array();
    for (const store::UserInfo& u : users.value()) {
      out.push_back({{"name", u.name}, {"admin", u.admin}, {"tokens", u.tokens}});
    }
    res.set_content(Dump(out), "application/json");
  });
  server.Delete(R"(/v1/users/([^/]+))", [&controller, changed = options.credentials_changed](
                                            const httplib::Request& req, httplib::Response& res) {
    auto admin = Admin(controller, req, res);
    if (!admin) return;
    const std::string name = req.matches[1];
    if (name == admin->name) {
      return Fail(res, 400, "you cannot remove yourself (another admin can)", "name");
    }
    auto removed = controller.store().RemoveUser(name);
    if (!removed) return api::Unavailable(res, removed.error());
    if (!removed.value()) return Fail(res, 404, "no user " + name, "name");
    Audit(controller, *admin, "user removed", name);
    if (changed) changed();
    res.set_content(Dump({{"removed", name}}), "application/json");
  });
  server.Post("/v1/tokens", [&controller, ca_sha256, max_ttl_s](const httplib::Request& req,
                                                                httplib::Response& res) {
    auto admin = Admin(controller, req, res);
    if (!admin) return;
    auto body = Body(req, res);
    if (!body) return;
    const json& j = *body;
    if (j.contains("join") && !j["join"].is_boolean()) {
      return Fail(res, 400, "join: must be true or false", "join");
    }
    store::TokenRecord record;
    record.created_ms = NowMs();
    record.created_by = admin->name;
    if (j.value("join", false)) {
      int64_t ttl_s = kDefaultJoinTtlS;
      if (j.contains("ttl_s")) {
        if (!j["ttl_s"].is_number_integer() || j["ttl_s"].get<int64_t>() < 1 ||
            j["ttl_s"].get<int64_t>() > kMaxJoinTtlS) {
          return Fail(res, 400, "ttl_s: must be an integer in 1.." + std::to_string(kMaxJoinTtlS),
                      "ttl_s");
        }
        ttl_s = j["ttl_s"].get<int64_t>();
      }
      record.kind = store::TokenKind::kJoin;
      record.expires_ms = record.created_ms + ttl_s * 1000;
      if (j.contains("node")) {  // bound: it may claim this node name only
        if (!j["node"].is_string() || !api::ValidName(j["node"].get<std::string>())) {
          return Fail(res, 400, "node: 1-64 of A-Z a-z 0-9 . _ @ -", "node");
        }
        record.node = j["node"].get<std::string>();
      }
    } else {
      record.kind = store::TokenKind::kUser;
      record.user = admin->name;
      const auto expires_ms = UserTokenExpiry(j, max_ttl_s, record.created_ms, res);
      if (!expires_ms) return;
      record.expires_ms = *expires_ms;
      if (j.contains("user")) {
        if (!j["user"].is_string() || !api::ValidName(j["user"].get<std::string>())) {
          return Fail(res, 400, "user: not a valid user name", "user");
        }
        record.user = j["user"].get<std::string>();
      }
      auto users = controller.store().Users();
      if (!users) return api::Unavailable(res, users.error());
      bool exists = false;
      for (const store::UserInfo& u : users.value()) exists = exists || u.name == record.user;
      if (!exists) return Fail(res, 404, "no user " + record.user, "user");
    }
    auto token = NewToken();
    if (!token) return api::Unavailable(res, token.error());
    record.sha256 = Sha256Hex(token.value());
    if (auto r = controller.store().AddToken(record); !r) return api::Unavailable(res, r.error());
    Audit(controller, *admin,
          record.kind == store::TokenKind::kJoin ? "join token created" : "token created",
          store::TokenId(record.sha256) +
              (record.user.empty() ? std::string() : " for " + record.user));
    json out = TokenJson(record);
    out["token"] = token.value();
    if (record.kind == store::TokenKind::kJoin && !ca_sha256.empty()) {
      // The agent pins the CA by this before it sends the secret (agent --join-token).
      out["token"] = token.value() + "." + ca_sha256;
      out["ca_sha256"] = ca_sha256;
    }
    res.status = 201;
    res.set_content(Dump(out), "application/json");
  });
  server.Get("/v1/tokens", [&controller](const httplib::Request& req, httplib::Response& res) {
    if (!Admin(controller, req, res)) return;
    auto tokens = controller.store().Tokens();
    if (!tokens) return api::Unavailable(res, tokens.error());
    json out = json::array();
    for (const store::TokenRecord& t : tokens.value()) out.push_back(TokenJson(t));
    res.set_content(Dump(out), "application/json");
  });
  server.Delete(R"(/v1/tokens/([^/]+))", [&controller, changed = options.credentials_changed](
                                             const httplib::Request& req, httplib::Response& res) {
    auto admin = Admin(controller, req, res);
    if (!admin) return;
    const std::string id = req.matches[1];
    auto revoked = controller.store().RevokeToken(id);
    if (!revoked) return Fail(res, revoked.failure());
    if (!revoked.value()) return Fail(res, 404, "no token " + id, "id");
    Audit(controller, *admin, "token revoked", id);
    if (changed) changed();
    res.set_content(Dump({{"revoked", id}}), "application/json");
  });
  server.Post(R"(/v1/nodes/([^/]+)/revoke)", [&controller](const httplib::Request& req,
                                                           httplib::Response& res) {
    auto admin = Admin(controller, req, res);
    if (!admin) return;
    const std::string node = req.matches[1];
    if (!net::IsNodeName(node)) return Fail(res, 400, "node: not a node name", "node");
    auto revoked = controller.store().RevokeNodeTokens(node);
    if (!revoked) return api::Unavailable(res, revoked.error());
    Audit(controller, *admin, "node credentials revoked",
          node + " (" + std::to_string(revoked.value()) + ")");
    res.set_content(Dump({{"node", node}, {"revoked", revoked.value()}}), "application/json");
  });
  // Drain and undrain: {"gpu": N} for one GPU (absent: all of the node's), {"reason": "..."}.
  const auto drain_route = [&controller](bool drain) {
    return [&controller, drain](const httplib::Request& req, httplib::Response& res) {
      auto admin = Admin(controller, req, res);
      if (!admin) return;
      auto body = Body(req, res);
      if (!body) return;
      const json& j = *body;
      int gpu = -1;
      if (j.contains("gpu") && !j["gpu"].is_null()) {
        if (!j["gpu"].is_number_integer() || j["gpu"].get<int64_t>() < 0 ||
            j["gpu"].get<int64_t>() >= core::kMaxGpusPerNode) {
          return Fail(res, 400, "gpu: a GPU index, 0.." + std::to_string(core::kMaxGpusPerNode - 1),
                      "gpu");
        }
        gpu = static_cast<int>(j["gpu"].get<int64_t>());
      }
      std::string reason;
      if (drain) {
        if (!j.contains("reason") || !j["reason"].is_string() ||
            j["reason"].get<std::string>().empty() || j["reason"].get<std::string>().size() > 256 ||
            !Printable(j["reason"].get<std::string>())) {
          return Fail(res, 400, "reason: say why, in 1-256 printable characters", "reason");
        }
        reason = j["reason"].get<std::string>();
      }
      const std::string node = req.matches[1];
      if (!net::IsNodeName(node)) return Fail(res, 400, "node: not a node name", "node");
      auto done = drain ? controller.Drain(node, gpu, reason, admin->name)
                        : controller.Undrain(node, gpu);
      if (!done) return Fail(res, done.failure());
      std::string gpus;
      for (int g : done.value()) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
      Audit(controller, *admin, drain ? "drain" : "undrain",
            "node " + node + " GPUs " + (gpus.empty() ? "none" : gpus) +
                (reason.empty() ? "" : ": " + reason));
      res.set_content(Dump(json{{"node", node}, {"gpus", done.value()}}), "application/json");
    };
  };
  server.Post(R"(/v1/nodes/([^/]+)/drain)", drain_route(true));
  server.Post(R"(/v1/nodes/([^/]+)/undrain)", drain_route(false));
  server.Get("/v1/audit", [&controller](const httplib::Request& req, httplib::Response& res) {
    if (!Admin(controller, req, res)) return;
    auto asked =
        api::ParseEventPage(req, res, "limit", "before", "after", kDefaultAuditPage, kMaxAuditPage);
    if (!asked) return;
    bool more = false;
    auto events = api::ReadEventPage(controller.store(), 0, *asked, more);
    if (!events) return api::Unavailable(res, events.error());
    const std::vector<store::JobEvent>& page = events.value();
    json out = json::array();
    for (const store::JobEvent& e : page) {
      out.push_back({{"id", e.id},
                     {"time_ms", e.time_ms},
                     {"actor", e.actor},
                     {"what", e.what},
                     {"detail", e.detail}});
    }
    if (more && asked->after >= 0) res.set_header("X-More-After", std::to_string(page.back().id));
    if (more && asked->after < 0) res.set_header("X-More-Before", std::to_string(page.front().id));
    res.set_content(Dump(out), "application/json");
  });
  server.Post("/v1/agent/join", [&controller](const httplib::Request& req, httplib::Response& res) {
    auto caller = api::Authenticate(controller.store(), req, res, NowMs());
    if (!caller) return;
    if (caller->kind != store::TokenKind::kJoin) {
      return Fail(res, 403, "joining needs a join token (`gpufleet token create --join`)");
    }
    auto body = Body(req, res);
    if (!body) return;
    const json& j = *body;
    if (!j.contains("node") || !j["node"].is_string() ||
        !api::ValidName(j["node"].get<std::string>())) {
      return Fail(res, 400, "node: 1-64 of A-Z a-z 0-9 . _ @ -", "node");
    }
    // A live node (one whose agent heartbeats, with an admin token say) is not for the taking:
    // its assignments carry other users' commands and environments. Nor is one that was live
    // when the controller restarted and has not been heard from since (UNKNOWN): its agent may
    // be about to return, with its jobs; once it misses its lease (LOST) it may be joined.
    for (const NodeView& n : controller.Nodes()) {
      if (n.name != j["node"].get<std::string>()) continue;
      if (n.state == "READY" || n.local) {
        return Fail(res, 403,
                    "node " + n.name +
                        " is live; a join cannot take it over (stop its agent, "
                        "or pick another --hostname)",
                    "node");
      }
      if (n.state == "UNKNOWN") {
        return Fail(res, 403,
                    "node " + n.name +
                        " was live when the controller restarted and its agent may still return; "
                        "a join may take the name once it has missed its lease (LOST)",
                    "node");
      }
    }
    const std::string node = j["node"].get<std::string>();
    if (!caller->node.empty() && caller->node != node) {
      return Fail(res, 403,
                  "this join token is for node " + caller->node + " only (agent --hostname " +
                      caller->node + ")",
                  "node");
    }
    auto token = NewToken();
    if (!token) return api::Unavailable(res, token.error());
    store::TokenRecord record;
    record.kind = store::TokenKind::kNode;
    record.node = node;
    record.sha256 = Sha256Hex(token.value());
    record.created_ms = NowMs();
    record.created_by = caller->name;
    const std::string join_sha = Sha256Hex(req.get_header_value("Authorization").substr(7));
    auto exchanged = controller.store().ExchangeJoinToken(join_sha, record, NowMs());
    if (!exchanged) return Fail(res, exchanged.failure());
    if (!exchanged.value()) return Fail(res, 401, "the join token was used or has expired");
    Audit(controller, *caller, "node joined", node);
    res.status = 201;
    res.set_content(Dump({{"node", node}, {"token", token.value()}}), "application/json");
  });
}

}  // namespace gpufleet::controller

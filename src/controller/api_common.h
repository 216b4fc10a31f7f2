#pragma once
// Pieces every part of the controller's HTTP API shares: JSON errors, status codes from error
// codes, bearer-token authentication. Internal to src/controller.
#include <httplib.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/container.h"
#include "core/result.h"
#include "store/store.h"

namespace gpufleet::controller::api {

using nlohmann::json;

std::string Dump(const json& j);
// Answers `status` with {"error": message, "field": field}.
void Fail(httplib::Response& res, int status, const std::string& message,
          const std::string& field = "");
// The HTTP status of an error code (invalid 400, forbidden 403, not found 404, infeasible 400,
// unavailable 503, internal 500).
int HttpStatus(core::ErrorCode code);
// Answers as Fail does; one a store said (503, "store ..." or "PostgreSQL ...") as Unavailable.
void Fail(httplib::Response& res, const core::Error& error);
// Answers 503 with `detail`, except where a store said it ("store /path: ...", "PostgreSQL
// host:port/db: ..."): that names the data directory or the database's address, so the caller
// gets "the controller cannot answer now (its log says more); try again" (with the disk full, the
// directory not writable or the database connection lost named), and the detail goes to the
// controller's standard error (each distinct detail at most once a second).
void Unavailable(httplib::Response& res, const std::string& detail);
std::optional<int64_t> ParseId(const std::string& text);
// A yes/no query parameter: "1" or "true", "0" or "false"; nothing for anything else.
std::optional<bool> ParseFlag(const std::string& text);

// A page of events asked for by query parameters `limit_key` (1..`most`, `fallback` when absent),
// and `before_key` (an event id: the latest ones older than it; 0 when absent) or `after_key` (an
// event id, 0 for the first: the earliest ones newer than it; -1 when absent), or nothing after
// answering 400 naming the parameter.
struct EventPage {
  int64_t limit = 0;
  int64_t before = 0;
  int64_t after = -1;
};
std::optional<EventPage> ParseEventPage(const httplib::Request& req, httplib::Response& res,
                                        const std::string& limit_key, const std::string& before_key,
                                        const std::string& after_key, int64_t fallback,
                                        int64_t most);
// The page of `job_id`'s events (job 0: the audit log) `page` asks for, oldest first; `more` says
// whether more remain beyond it in the direction asked (older ones, or with `after`, newer
// ones). An error when the store failed.
core::Result<std::vector<store::JobEvent>> ReadEventPage(store::Store& store, int64_t job_id,
                                                         const EventPage& page, bool& more);

// Who sent a request: a user, a node's agent, or the holder of a join token.
struct Caller {
  store::TokenKind kind = store::TokenKind::kUser;
  std::string name;  // the user; "node:NAME" for a node credential
  bool admin = false;
  std::string node;  // kNode: the node it may act as; kJoin: the only node it may claim ("": any)
};
// The caller behind the request's bearer token, or nothing after answering 401 (no or unknown
// token, or an expired join token) or 503 (the store failed).
std::optional<Caller> Authenticate(store::Store& store, const httplib::Request& req,
                                   httplib::Response& res, int64_t now_ms);

// The caller's user, or nothing after answering 401 (no valid token) or 403 (a node or join
// credential, which acts only in the agent protocol).
std::optional<store::UserRecord> AuthenticateUser(store::Store& store, const httplib::Request& req,
                                                  httplib::Response& res, int64_t now_ms);
// Job `id_text` if it exists and `user` may see it (their own, or any for an admin); else answers
// 400 (not a number), 404 (no such job, or another user's: it does not exist for them) or 503.
std::optional<store::JobRecord> VisibleJob(store::Store& store, const std::string& id_text,
                                           const store::UserRecord& user, httplib::Response& res);

// The SHA-256 (hex) of the request's bearer token, as the store keys credentials; "" without one.
std::string CredentialSha256(const httplib::Request& req);

// Valid user and node names: 1-64 of [A-Za-z0-9._@-], not starting with '-' or '.'.
bool ValidName(const std::string& name);

// What a user who is not an admin sees of the GPU processes in a node's samples (any
// "processes" array, at any depth of `samples`): those of their own jobs (`own_jobs`, ids as text)
// whole; anyone else's without the command line, account or job (null), since a command line may
// carry secrets and other users' jobs are not theirs to see. Pid, memory and utilisation stay,
// as nvidia-smi shows them.
void HideOthersProcesses(json& samples, const std::set<std::string>& own_jobs);

// The container images a node holds that a user who is not an admin sees: those a job may name
// (under a prefix of `policy`'s allowed images). Others (an image another user pulled from a
// private registry, the node's own) are the node admin's to see, as /v1/jobs hides others'
// jobs' images.
std::vector<std::string> ImagesShownToUsers(const std::vector<std::string>& images,
                                            const core::ContainerPolicy& policy);

}  // namespace gpufleet::controller::api

#pragma once
// The controller's account and credential API (admins only, each action recorded in the audit
// log with who did it), and the join handshake of new agents:
//   POST   /v1/users {"name","admin","ttl_s"}  add a user; 201 {"user","token","expires_ms"}
//                                            (the token, once)
//   GET    /v1/users                         users, with how many tokens each has
//   DELETE /v1/users/<name>                  remove a user and their tokens (jobs stay)
//   POST   /v1/tokens {"user","ttl_s"} | {"join":true,"ttl_s"}   a new token, shown once; a join
//                                            token of an https controller ends in ".<CA sha256>";
//                                            a user token works until ttl_s from now (absent: no
//                                            end, or the lifetime cap when one is set)
//   GET    /v1/tokens                        every credential by id (never the token itself)
//   DELETE /v1/tokens/<id>                   revoke one
//   POST   /v1/nodes/<name>/revoke           revoke every credential of a node
//   GET    /v1/audit[?limit=N][&before=ID]   admin actions (id, who, what, when), oldest first:
//                                            the latest N (default 1000, at most 10000), or the
//                                            N before event ID; header X-More-Before: the id to
//                                            ask before for the next older page, when there is one
//   POST   /v1/agent/join {"node"}           a join token buys a credential for that node only
#include <httplib.h>

#include <functional>

#include "controller/controller.h"
#include "net/http_server.h"

namespace gpufleet::controller {

struct AdminRouteOptions {
  std::string ca_sha256;  // the cluster CA's hash when the API speaks https ("" for plain HTTP)
  // The longest a user token made through the API may work (0: no cap). Tokens asked for without
  // a ttl_s get exactly this; longer asks are refused. The token `up` writes for the local admin
  // is not made here and has no end.
  int64_t user_token_max_ttl_s = 0;
  // Called after a token is revoked or a user removed, so that what that credential opened (live
  // event streams) closes now rather than at its next check (may be empty).
  std::function<void()> credentials_changed;
};

void AddAdminRoutes(net::HttpServer& server, Controller& controller,
                    const AdminRouteOptions& options);

}  // namespace gpufleet::controller

#pragma once
// The controller's account and credential API (admins only, each action recorded in the audit
// log with who did it), and the join handshake of new agents:
//   POST   /v1/users {"name","admin"}        add a user; 201 {"user","token"} (the token, once)
//   GET    /v1/users                         users, with how many tokens each has
//   DELETE /v1/users/<name>                  remove a user and their tokens (jobs stay)
//   POST   /v1/tokens {"user"} | {"join":true,"ttl_s"}   a new token, shown once; a join token
//                                            of an https controller ends in ".<CA sha256>"
//   GET    /v1/tokens                        every credential by id (never the token itself)
//   DELETE /v1/tokens/<id>                   revoke one
//   POST   /v1/nodes/<name>/revoke           revoke every credential of a node
//   GET    /v1/audit                         admin actions (who, what, when)
//   POST   /v1/agent/join {"node"}           a join token buys a credential for that node only
#include <httplib.h>

#include "controller/controller.h"
#include "net/http_server.h"

namespace gpufleet::controller {

// `ca_sha256`: the cluster CA's hash when the API speaks https ("" for plain HTTP).
void AddAdminRoutes(net::HttpServer& server, Controller& controller, const std::string& ca_sha256);

}  // namespace gpufleet::controller
